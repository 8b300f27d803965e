"""Pod networking for the kubelet (upstream's kubenet + CNI bridge/host-local):

- `ipam`: the node's podCIDR addresses, persistent, no double allocation across processes or restarts;
- `bridge`: the node bridge (`cbr0`) and the sysctls it needs;
- `podnet`: one sandbox's veth pair, eth0 inside its namespace, routes (`PodNetwork` Protocol);
- `iptables`: which iptables backend the host uses, and a client for it;
- `rules`: the forward-accept and masquerade chains pods need, rendered by pure functions;
- `manager`: the three together, as the pod-sync code uses them;
- `cni/`: the CNI plugin mode (`--network-plugin cni`), in the shape of libcni;
- `sandbox`: a pod's interface per `--network-plugin`, builtin (`manager`) or cni, behind one Protocol;
- `backends/`: routes towards other nodes' pods (`--pod-network`).
"""
