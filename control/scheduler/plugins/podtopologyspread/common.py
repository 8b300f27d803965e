"""What PodTopologySpread's filter and score share: a pod's `topologySpreadConstraints` (or the default
constraints) parsed into typed records, which nodes a constraint counts (node inclusion policies), and how
pods are counted.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/common.go (`topologySpreadConstraint`,
`filterTopologySpreadConstraints` with its defaults — minDomains 1, nodeAffinityPolicy Honor,
nodeTaintsPolicy Ignore — and matchLabelKeys merged into the selector, `buildDefaultConstraints`,
`nodeLabelsMatchSpreadConstraints`, `countPodsMatchSelector`, `matchNodeInclusionPolicies`) and plugin.go
(`systemDefaultConstraints`: hostname maxSkew 3, zone maxSkew 5, both ScheduleAnyway). The feature gates
upstream once had for minDomains, node inclusion policies and matchLabelKeys are on (their GA state).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from control.api.nodeaffinity import required_matches
from control.api.taints import taints_of, tolerates, tolerations_of
from control.api.typed.core import Node
from control.api.typed.core import Pod as PodView
from control.apimachinery import labels
from control.scheduler.framework import Listers, Pod
from control.scheduler.nodeinfo import NodeInfo, PodInfo
from control.scheduler.plugins.defaultselector import default_selector

NAME = "PodTopologySpread"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"

SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"maxSkew": 3, "topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY},
    {"maxSkew": 5, "topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY},
)
_DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")  # upstream helper.DoNotScheduleTaintsFilterFunc


@dataclass(frozen=True)
class Constraint:
    """One spread constraint with its selector parsed (upstream topologySpreadConstraint)."""

    max_skew: int
    topology_key: str
    selector: labels.Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def matches_node_inclusion_policies(self, pod: Pod, node: Mapping[str, Any]) -> bool:
        """Whether `node` counts for this constraint: with Honor, only nodes matching the pod's nodeSelector
        and required node affinity / whose NoSchedule and NoExecute taints the pod tolerates."""
        if self.node_affinity_policy == HONOR and not required_matches(pod, node):
            return False
        if self.node_taints_policy == HONOR:
            tolerations = list(tolerations_of(pod))
            for taint in taints_of(node):
                if taint.get("effect") in _DO_NOT_SCHEDULE_EFFECTS and not any(tolerates(t, taint)
                                                                                 for t in tolerations):
                    return False
        return True


def pod_labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    return PodView(pod).metadata.labels


def node_labels(node: Mapping[str, Any] | None) -> Mapping[str, str]:
    return Node(node).metadata.labels


def _merge_match_label_keys(keys: Iterable[str], labels_of_pod: Mapping[str, str],
                            selector: labels.Selector) -> labels.Selector:
    """Upstream mergeLabelSetWithSelector: the pod's values of `matchLabelKeys` ANDed with the selector."""
    match = {key: labels_of_pod[key] for key in keys if key in labels_of_pod}
    if not match:
        return selector
    requirements = labels.selector_from_set(match).requirements + selector.requirements
    return labels.Selector(tuple(sorted(requirements, key=lambda r: r.key)))


def filter_constraints(constraints: Iterable[Mapping[str, Any]], labels_of_pod: Mapping[str, str],
                       action: str) -> list[Constraint]:
    """The constraints whose whenUnsatisfiable is `action`, parsed, with upstream's defaults. Raises
    SelectorError for an invalid labelSelector (the cycle fails with an error, as upstream)."""
    result = []
    for constraint in constraints:
        if constraint.get("whenUnsatisfiable") != action:
            continue
        selector = labels.selector_from_label_selector(constraint.get("labelSelector"))
        selector = _merge_match_label_keys(constraint.get("matchLabelKeys") or (), labels_of_pod, selector)
        min_domains = constraint.get("minDomains")
        result.append(Constraint(
            max_skew=int(constraint.get("maxSkew") or 0),
            topology_key=constraint.get("topologyKey") or "",
            selector=selector,
            min_domains=int(min_domains) if min_domains is not None else 1,
            node_affinity_policy=constraint.get("nodeAffinityPolicy") or HONOR,
            node_taints_policy=constraint.get("nodeTaintsPolicy") or IGNORE))
    return result


def build_default_constraints(pod: Pod, defaults: Sequence[Mapping[str, Any]], listers: Listers,
                              action: str) -> list[Constraint]:
    """The default constraints of `action`, each with the pod's default selector (the Services and
    controller that select it); none if nothing selects the pod."""
    constraints = filter_constraints(defaults, pod_labels(pod), action)
    if not constraints:
        return []
    selector = default_selector(pod, listers)
    if selector.empty:
        return []
    return [Constraint(c.max_skew, c.topology_key, selector, c.min_domains, c.node_affinity_policy,
                       c.node_taints_policy) for c in constraints]


def node_labels_match_spread_constraints(labels_of_node: Mapping[str, str], constraints: Iterable[Constraint]) -> bool:
    """Whether the node has every constraint's topology key."""
    return all(c.topology_key in labels_of_node for c in constraints)


def count_node_pods_match_selector(node: NodeInfo, selector: labels.Selector, namespace: str) -> int:
    """`count_pods_match_selector` over a node's pods, remembered until a pod comes to or leaves the node:
    every cycle counts every node, and between two cycles only the node the last pod went to changes."""
    memo = node.memo()
    key = ("PodTopologySpread", selector, namespace)
    count = memo.get(key)
    if count is None:
        count = memo[key] = count_pods_match_selector(node.pods.values(), selector, namespace)
    return count


def count_pods_match_selector(pods: Iterable[PodInfo], selector: labels.Selector, namespace: str) -> int:
    """Pods of `namespace` the selector matches, terminating ones left out (upstream #87621). The selector
    is matched once per distinct label set: this runs for every node in every cycle, over every pod."""
    count = 0
    matched: dict[frozenset[tuple[str, str]], bool] = {}
    for info in pods:
        key = info.selector_key
        if key is None or key[0] != namespace:
            continue
        hit = matched.get(key[1])
        if hit is None:
            hit = matched[key[1]] = selector.matches(dict(key[1]))
        count += hit
    return count
