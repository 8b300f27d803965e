"""SelectorSpread: prefer nodes, and zones, with fewer pods of the same Services / RC / RS / StatefulSet
(formerly SelectorSpreadPriority). Registered but not in the default profile, as upstream since 1.23
(PodTopologySpread's system defaults replace it); a profile can enable it.

Upstream: pkg/scheduler/framework/plugins/selectorspread/selector_spread.go (as of 1.25, its last release):
PreScore builds the pod's default selector (defaultselector.py) unless the pod has
topologySpreadConstraints of its own (then the plugin does nothing); Score counts the node's matching
pods of the pod's namespace, terminating ones left out; NormalizeScore gives
`100 · (maxByNode - count) / maxByNode` (100 when nothing matches) and, when nodes carry zone labels,
weighs that 1/3 against 2/3 of the same formula over the zone's summed counts (`zoneWeighting`). The zone
key is region and zone together (upstream utilnode.GetZoneKey, the GA labels first, then the beta ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.typed.core import Node
from control.api.typed.core import Pod as PodView
from control.apimachinery.labels import Selector
from control.scheduler.framework import MAX_NODE_SCORE, SKIP, SUCCESS, CycleState, Pod, Status
from control.scheduler.nodeinfo import NodeInfo
from control.scheduler.plugins.defaultselector import default_selector

NAME = "SelectorSpread"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ZONE_WEIGHTING = 2.0 / 3.0
_REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
_ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")


def _first_label(node_labels: Mapping[str, str], keys: tuple[str, str]) -> str:
    """The GA label if the node has it (even empty), else the beta one."""
    return node_labels[keys[0]] if keys[0] in node_labels else node_labels.get(keys[1], "")


def zone_key(node: Mapping[str, Any] | None) -> str:
    """"region:\\x00:zone", or "" for a node with neither label (upstream GetZoneKey)."""
    node_labels = Node(node).metadata.labels
    region, zone = _first_label(node_labels, _REGION_LABELS), _first_label(node_labels, _ZONE_LABELS)
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def count_matching_pods(namespace: str, selector: Selector, node: NodeInfo) -> int:
    if not node.pods or selector.empty:
        return 0
    count = 0
    for info in node.pods.values():
        metadata = PodView(info.pod).metadata
        if metadata.namespace == namespace and not metadata.deletion_timestamp and selector.matches(metadata.labels):
            count += 1
    return count


def normalize(scores: dict[str, int], zones: Mapping[str, str]) -> None:
    """Upstream NormalizeScore over raw counts by node name, with each node's zone key ("" none), in place."""
    max_by_node = max(scores.values(), default=0)
    counts_by_zone: dict[str, int] = {}
    for name, count in scores.items():
        zone = zones.get(name, "")
        if zone:
            counts_by_zone[zone] = counts_by_zone.get(zone, 0) + count
    max_by_zone = max(counts_by_zone.values(), default=0)
    for name, count in scores.items():
        score = float(MAX_NODE_SCORE)
        if max_by_node > 0:
            score = MAX_NODE_SCORE * ((max_by_node - count) / max_by_node)
        zone = zones.get(name, "")
        if counts_by_zone and zone:
            zone_score = float(MAX_NODE_SCORE)
            if max_by_zone > 0:
                zone_score = MAX_NODE_SCORE * ((max_by_zone - counts_by_zone[zone]) / max_by_zone)
            score = score * (1.0 - ZONE_WEIGHTING) + ZONE_WEIGHTING * zone_score
        scores[name] = int(score)


class SelectorSpread:
    name = NAME

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        if PodView(pod).spec.topology_spread_constraints:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, default_selector(pod, state.listers))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        namespace = PodView(pod).metadata.namespace
        return count_matching_pods(namespace, state.read(PRE_SCORE_STATE_KEY), node)

    def normalize_scores(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        zones = {}
        for name in scores:
            info = state.snapshot.get(name)
            zones[name] = zone_key(info.node if info is not None else None)
        normalize(scores, zones)
