"""The sandbox network the pod-sync code drives, one per `--network-plugin`:

- `BuiltinNetwork`: the kubelet's own bridge, veth and IPAM (manager.py), hostPorts through the kubelet's
  KUBE-HP- rules (hostport_manager.py, called by the pod sync);
- `CNINetwork`: the plugins of the CNI configuration (cni/podnet.py), hostPorts through the list's
  `portmap`.

Both keep the host rules pods need (forward accept, egress masquerade: rules.py) on the node bridge, so a
default CNI list on the same bridge (cni/default.py) behaves as the built-in network does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from control.api.typed.core import Pod
from nodeagent.network import rules
from nodeagent.network.cni.podnet import CNIPodNetwork
from nodeagent.network.ipam import LocalIPAM
from nodeagent.network.manager import PodNetworkManager
from nodeagent.network.podnet import PodInterface


class SandboxNetwork(Protocol):
    def start(self, live_sandbox_ids: Iterable[str]) -> dict[str, str]: ...

    def ensure_host(self) -> None: ...

    def attach(self, sandbox_id: str, pod: Mapping[str, Any], pid_or_netns_path: int | str) -> PodInterface: ...

    def detach(self, sandbox_id: str) -> str | None: ...

    def remove_host_rules(self) -> None:
        """Take the node bridge's host rules (forward accept, egress masquerade) away: `down` and tests."""


class BuiltinNetwork:
    def __init__(self, manager: PodNetworkManager, ipam: LocalIPAM) -> None:
        self.manager = manager
        self._ipam = ipam

    def start(self, live_sandbox_ids: Iterable[str]) -> dict[str, str]:
        """Bridge and rules ensured; addresses of gone sandboxes freed; sandbox id → IP of the rest."""
        self.manager.start(live_sandbox_ids)
        return {owner: allocation.ip for owner, allocation in self._ipam.allocations().items()}

    def ensure_host(self) -> None:
        self.manager.ensure_host()

    def attach(self, sandbox_id: str, pod: Mapping[str, Any], pid_or_netns_path: int | str) -> PodInterface:
        return self.manager.attach(sandbox_id, Pod(pod).metadata.uid, pid_or_netns_path)

    def detach(self, sandbox_id: str) -> str | None:
        return self.manager.detach(sandbox_id)

    def remove_host_rules(self) -> None:
        self.manager.remove_host_rules()


class CNINetwork:
    def __init__(self, cni: CNIPodNetwork, *, iptables: rules.IptablesClient, host_rules: rules.PodRulesConfig) -> None:
        self.cni = cni
        self._iptables = iptables
        self._rules = host_rules

    def start(self, live_sandbox_ids: Iterable[str]) -> dict[str, str]:
        self.ensure_host()
        return self.cni.start(live_sandbox_ids)

    def ensure_host(self) -> None:
        rules.apply(self._iptables, self._rules)

    def attach(self, sandbox_id: str, pod: Mapping[str, Any], pid_or_netns_path: int | str) -> PodInterface:
        return self.cni.attach(sandbox_id, pod, pid_or_netns_path)

    def detach(self, sandbox_id: str) -> str | None:
        return self.cni.detach(sandbox_id)

    def remove_host_rules(self) -> None:
        rules.remove(self._iptables, self._rules)
