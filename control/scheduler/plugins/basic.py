"""Three small filters: NodeName, NodePorts, NodeUnschedulable.

Upstream: pkg/scheduler/framework/plugins/nodename, nodeports, nodeunschedulable; the old predicates HostName
(PodFitsHost) and PodFitsHostPorts — a host port may be used once per node, container ports any number
of times; a hostIP of 0.0.0.0 conflicts with every address on the same port and protocol.
"""

from __future__ import annotations

from control.api.taints import tolerates
from control.api.typed.core import Pod as PodView
from control.scheduler.cache import Snapshot
from control.scheduler.framework import SKIP, SUCCESS, CycleState, Pod, Status, unschedulable
from control.scheduler.nodeinfo import NodeInfo
from control.scheduler.resources import host_ports

NODE_NAME_REASON = "node(s) didn't match the requested node name"
NODE_PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"
UNSCHEDULABLE_REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
WILDCARD_IP = "0.0.0.0"


class NodeName:
    name = "NodeName"

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        wanted = (pod.get("spec") or {}).get("nodeName")  # read per node per cycle: a plain read, no view
        if wanted and wanted != node.name:
            return unschedulable(NODE_NAME_REASON, resolvable=False)
        return SUCCESS


def ports_conflict(wanted: tuple[str, str, int], used: set[tuple[str, str, int]]) -> bool:
    """Upstream HostPortInfo.CheckConflict: same protocol and port, and the same IP or either one 0.0.0.0."""
    ip, protocol, port = wanted
    if ip == WILDCARD_IP:
        return any(p == protocol and n == port for _, p, n in used)
    return (ip, protocol, port) in used or (WILDCARD_IP, protocol, port) in used


class NodePorts:
    name = "NodePorts"

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        ports = host_ports(pod)
        if not ports:
            return SKIP
        state.write(self.name, ports)
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if any(ports_conflict(wanted, node.used_ports) for wanted in state.read(self.name)):
            return unschedulable(NODE_PORTS_REASON)
        return SUCCESS


class NodeUnschedulable:
    name = "NodeUnschedulable"

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if not node.facts.unschedulable:
            return SUCCESS
        if any(tolerates(toleration.raw, UNSCHEDULABLE_TAINT) for toleration in PodView(pod).spec.tolerations):
            return SUCCESS
        return unschedulable(UNSCHEDULABLE_REASON, resolvable=False)
