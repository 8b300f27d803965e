"""The kubelet's CNI plugin mode (`--network-plugin cni`), in the shape of upstream's libcni
(github.com/containernetworking/cni libcni/api.go, pkg/invoke) and the dockershim-era kubelet's CNI
network plugin (pkg/kubelet/dockershim/network/cni/cni.go):

- `version`, `conf`, `result`: pure — spec versions, picking and parsing the network configuration list,
  each plugin's stdin config (name/cniVersion/prevResult/runtimeConfig), results and error JSON;
- `cache`: the record of each ADD (config, arguments, result) that lets a DEL run after a restart or a
  configuration change, as libcni keeps in /var/lib/cni/results;
- `invoke`: the narrow exec interface (environment, stdin, stdout) and the real one, a subprocess;
- `api`: ADD / CHECK / DEL of a configuration list (libcni's AddNetworkList, CheckNetworkList,
  DelNetworkList);
- `default`: the conflist written when the mode is chosen and none exists (Debian's plugins);
- `podnet`: what the pod-sync code calls: a sandbox's attach/detach, and the reconciliation at start.
"""
