"""The kubelet's pod networking in one place: IPAM + bridge/veth + host rules.

Upstream's kubenet (pkg/kubelet/dockershim/network/kubenet/kubenet_linux.go) is the model: on start the
bridge and the host rules are ensured; `SetUpPod` gets an address from IPAM and wires the sandbox, giving
the address back if wiring fails; `TearDownPod` unwires and releases.
The restart-safety part is ours: at start-up, after the kubelet has adopted the sandboxes Docker still runs, `start`
frees the addresses of every sandbox that is gone, so neither a leak nor a double allocation survives a
kill -9.

`attach` and `detach` raise only `NETWORK_ERRORS`: PodNetworkError (netlink, a namespace or bridge gone),
IPAMError (no free address, a bad state file) and OSError (the state file's I/O), so callers catch those.

Everything here goes through three small Protocols (IPAM, `PodNetwork`, `IptablesClient`), so the
pod-sync code and this module are unit-tested with fakes; tests/integration/test_pod_network.py runs the
real ones.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from nodeagent.network import rules
from nodeagent.network.ipam import Allocation, IPAMError, allocatable, gateway_of
from nodeagent.network.podnet import DEFAULT_VETH_PREFIX, PodInterface, PodNetwork, PodNetworkError, veth_name

NETWORK_ERRORS: tuple[type[Exception], ...] = (PodNetworkError, IPAMError, OSError)


class IPAM(Protocol):
    def allocate(self, owner_id: str, pod_uid: str) -> str: ...

    def release(self, owner_id: str) -> str | None: ...

    def reconcile(self, live_owner_ids: Iterable[str]) -> dict[str, Allocation]: ...


@dataclass(frozen=True)
class NetworkConfig:
    """The node's pod network: the podCIDR it got, the cluster CIDR around it, and host names to use."""

    pod_cidr: str
    cluster_cidr: str = "10.244.0.0/16"
    bridge: str = "cbr0"
    veth_prefix: str = DEFAULT_VETH_PREFIX
    mtu: int = 1500
    forward_chain: str = rules.DEFAULT_FORWARD_CHAIN
    masq_chain: str = rules.DEFAULT_MASQ_CHAIN

    def __post_init__(self) -> None:
        """Refuse bad CIDRs, chain, bridge and prefix names now rather than at the first pod."""
        rules.PodRulesConfig(bridge=self.bridge, pod_cidr=self.pod_cidr, cluster_cidr=self.cluster_cidr,
                             forward_chain=self.forward_chain, masq_chain=self.masq_chain)
        veth_name("", prefix=self.veth_prefix)
        allocatable(self.pod_cidr)

    @property
    def gateway(self) -> str:
        return gateway_of(self.pod_cidr)

    @property
    def prefix_len(self) -> int:
        return ipaddress.IPv4Network(self.pod_cidr).prefixlen

    @property
    def rules(self) -> rules.PodRulesConfig:
        return rules.PodRulesConfig(bridge=self.bridge, pod_cidr=self.pod_cidr, cluster_cidr=self.cluster_cidr,
                                    forward_chain=self.forward_chain, masq_chain=self.masq_chain)


class PodNetworkManager:
    def __init__(self, config: NetworkConfig, *, ipam: IPAM, network: PodNetwork,
                 iptables: rules.IptablesClient) -> None:
        self._config = config
        self._ipam = ipam
        self._network = network
        self._iptables = iptables

    @property
    def config(self) -> NetworkConfig:
        return self._config

    def start(self, live_sandbox_ids: Iterable[str]) -> dict[str, Allocation]:
        """Ensure bridge and rules; free the addresses of sandboxes not in `live_sandbox_ids` (returned)."""
        self.ensure_host()
        return self._ipam.reconcile(live_sandbox_ids)

    def ensure_host(self) -> None:
        """Bridge and rules (idempotent): at start and on every periodic resync."""
        c = self._config
        self._network.ensure_bridge(c.bridge, f"{c.gateway}/{c.prefix_len}")
        rules.apply(self._iptables, c.rules)

    def attach(self, sandbox_id: str, pod_uid: str, pid_or_netns_path: int | str) -> PodInterface:
        """Give the sandbox an address and wire it; on failure the address is released again."""
        c = self._config
        ip = self._ipam.allocate(sandbox_id, pod_uid)
        try:
            return self._network.setup_pod_network(
                pid_or_netns_path, ip=ip, prefix_len=c.prefix_len, gateway=c.gateway, bridge=c.bridge,
                host_veth_name=self.host_veth(sandbox_id), mtu=c.mtu)
        except BaseException:
            self._ipam.release(sandbox_id)
            raise

    def detach(self, sandbox_id: str) -> str | None:
        """Unwire the sandbox and release its address (returned; None if it had none). Idempotent."""
        self._network.teardown_pod_network(self.host_veth(sandbox_id))
        return self._ipam.release(sandbox_id)

    def host_veth(self, sandbox_id: str) -> str:
        return veth_name(sandbox_id, prefix=self._config.veth_prefix)

    def remove_host_rules(self) -> None:
        """`slimkube down`: delete our chains and the jumps to them (the bridge goes with bridge.delete_bridge)."""
        rules.remove(self._iptables, self._config.rules)
