"""InterPodAffinity: a pod goes (or must not go) into a topology domain — the nodes sharing a label value,
e.g. one node for `kubernetes.io/hostname`, a zone for `topology.kubernetes.io/zone` — with pods its terms
select; and it must not go where an existing pod's required anti-affinity selects it.

Upstream: pkg/scheduler/framework/plugins/interpodaffinity/ — filtering.go (PreFilter counts, per topology
pair, existing pods whose required anti-affinity matches the pod, and existing pods matching the pod's
required affinity — all terms at once — and anti-affinity terms; AddPod/RemovePod keep the counts when
preemption or nominated pods change a node; Filter with its three reasons, affinity failures
UnschedulableAndUnresolvable, the "first pod of a series" exception: a pod whose required affinity matches
nothing anywhere may go where the topology keys exist if it matches its own terms), scoring.go (PreScore
sums, per topology pair, the weights of the pod's preferred terms over the existing pods they match — minus
for anti-affinity — and of the existing pods' terms the pod matches: preferred ones by their weight,
required affinity by hardPodAffinityWeight; Score adds the pairs of a node; NormalizeScore maps min..max to
0..100) and plugin.go (the namespaceSelector of the pod's own terms unrolled into namespaces through the
namespace lister; the labels of the pod's namespace for existing pods' terms; the queueing hint on pod
events). Formerly MatchInterPodAffinity and InterPodAffinityPriority.

Args (InterPodAffinityArgs): hardPodAffinityWeight (default 1, 0..100), ignorePreferredTermsOfExistingPods
(default false).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from control.api.typed.core import Namespace
from control.api.typed.core import Pod as PodView
from control.apimachinery.labels import NOTHING
from control.scheduler.affinityterms import AffinityTerm, PodAffinityTerms, WeightedAffinityTerm, pod_affinity_terms
from control.scheduler.cache import Snapshot
from control.scheduler.framework import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    Listers,
    Pod,
    Status,
    unschedulable,
)
from control.scheduler.nodeinfo import NodeInfo, PodInfo

NAME = "InterPodAffinity"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"
AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

Pair = tuple[str, str]  # (topology key, value)


def _update(counts: dict[Pair, int], labels: Mapping[str, str], key: str, value: int) -> None:
    """Add `value` to the node's pair for `key` (none if the node lacks the label); drop pairs down to 0."""
    if key not in labels:
        return
    pair = (key, labels[key])
    counts[pair] = counts.get(pair, 0) + value
    if counts[pair] == 0:
        del counts[pair]


def matches_all(terms: Iterable[AffinityTerm], pod: Pod) -> bool:
    """Upstream podMatchesAllAffinityTerms: at least one term, and the pod matches every one (the terms'
    namespaceSelector is already unrolled, so no namespace labels are needed)."""
    terms = tuple(terms)
    return bool(terms) and all(term.matches(pod, None) for term in terms)


def _merge_namespaces(term: AffinityTerm, listers: Listers) -> AffinityTerm:
    """Upstream mergeAffinityTermNamespacesIfNotEmpty: the namespaces the term's namespaceSelector selects
    become listed ones; an empty selector (every namespace) stays as it is."""
    if term.namespace_selector.empty or term.namespace_selector == NOTHING:
        return term
    names = {Namespace(ns).metadata.name for ns in listers.namespaces.list(
        label_selector=term.namespace_selector)}
    return term.with_namespaces(names)


@dataclass
class PreFilterState:
    """Upstream preFilterState: the three counts by topology pair, the pod's required terms (namespaces
    merged) and its namespace's labels."""

    pod: Pod
    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    namespace_labels: Mapping[str, str]
    existing_anti_affinity_counts: dict[Pair, int] = field(default_factory=dict)
    affinity_counts: dict[Pair, int] = field(default_factory=dict)
    anti_affinity_counts: dict[Pair, int] = field(default_factory=dict)

    def clone(self) -> PreFilterState:
        return PreFilterState(self.pod, self.required_affinity, self.required_anti_affinity, self.namespace_labels,
                              dict(self.existing_anti_affinity_counts), dict(self.affinity_counts),
                              dict(self.anti_affinity_counts))

    def count_existing_pod(self, existing: PodInfo, labels: Mapping[str, str], value: int) -> None:
        """Upstream updateWithPod (and the per-pod step of PreFilter): `existing` on a node with `labels`
        counts `value` times (+1 added, -1 removed)."""
        for term in existing.affinity.required_anti_affinity:
            if term.matches(self.pod, self.namespace_labels):
                _update(self.existing_anti_affinity_counts, labels, term.topology_key, value)
        self.count_incoming_terms(existing.pod, labels, value)

    def count_incoming_terms(self, existing: Pod, labels: Mapping[str, str], value: int) -> None:
        if matches_all(self.required_affinity, existing):
            for term in self.required_affinity:
                _update(self.affinity_counts, labels, term.topology_key, value)
        for term in self.required_anti_affinity:
            if term.matches(existing, None):
                _update(self.anti_affinity_counts, labels, term.topology_key, value)


def pre_filter_state(pod: Pod, terms: PodAffinityTerms, nodes: Iterable[NodeInfo], listers: Listers) -> PreFilterState:
    """The counts over the cycle's nodes (upstream getExistingAntiAffinityCounts +
    getIncomingAffinityAntiAffinityCounts)."""
    state = PreFilterState(pod, tuple(_merge_namespaces(term, listers) for term in terms.required_affinity),
                           tuple(_merge_namespaces(term, listers) for term in terms.required_anti_affinity),
                           listers.namespace_labels(PodView(pod).metadata.namespace))
    incoming = bool(state.required_affinity or state.required_anti_affinity)
    for node in nodes:
        labels = node.labels
        for existing in node.pods_with_required_anti_affinity():
            for term in existing.affinity.required_anti_affinity:
                if term.matches(pod, state.namespace_labels):
                    _update(state.existing_anti_affinity_counts, labels, term.topology_key, 1)
        if incoming:
            for existing in node.pods.values():
                state.count_incoming_terms(existing.pod, labels, 1)
    return state


def satisfies_existing_pods_anti_affinity(state: PreFilterState, node: NodeInfo) -> bool:
    counts = state.existing_anti_affinity_counts
    return not counts or not any(counts.get(pair, 0) > 0 for pair in node.labels.items())


def satisfies_pod_anti_affinity(state: PreFilterState, node: NodeInfo) -> bool:
    labels = node.labels
    if not state.anti_affinity_counts:
        return True
    return not any(term.topology_key in labels and
                   state.anti_affinity_counts.get((term.topology_key, labels[term.topology_key]), 0) > 0
                   for term in state.required_anti_affinity)


def satisfies_pod_affinity(state: PreFilterState, node: NodeInfo) -> bool:
    """Every required term's topology key on the node, and matching pods in each pair — or the first pod of
    a series (module notes)."""
    labels = node.labels
    pods_exist = True
    for term in state.required_affinity:
        if term.topology_key not in labels:
            return False
        if state.affinity_counts.get((term.topology_key, labels[term.topology_key]), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    return not state.affinity_counts and matches_all(state.required_affinity, state.pod)


ScoreMap = dict[str, dict[str, int]]  # topology key → value → score


def _process_term(scores: ScoreMap, term: AffinityTerm, weight: int, pod: Pod,
                  namespace_labels: Mapping[str, str] | None, labels: Mapping[str, str], multiplier: int) -> None:
    if term.matches(pod, namespace_labels) and term.topology_key in labels:
        by_value = scores.setdefault(term.topology_key, {})
        value = labels[term.topology_key]
        by_value[value] = by_value.get(value, 0) + weight * multiplier


def _process_terms(scores: ScoreMap, terms: Iterable[WeightedAffinityTerm], pod: Pod,
                   namespace_labels: Mapping[str, str] | None, labels: Mapping[str, str], multiplier: int) -> None:
    for weighted in terms:
        _process_term(scores, weighted.term, weighted.weight, pod, namespace_labels, labels, multiplier)


@dataclass(frozen=True)
class PreScoreState:
    topology_score: ScoreMap


def pod_may_fit_after_pod_change(pod: Pod, old: Pod | None, new: Pod | None) -> bool:
    """Upstream isSchedulableAfterPodChange, for a pending `pod` that InterPodAffinity rejected: an assigned
    pod added that matches all its required affinity terms, updated to match them or to stop matching its
    anti-affinity terms, or deleted while matching them."""
    if any(changed is not None and not PodView(changed).spec.node_name for changed in (old, new)):
        return False
    terms = pod_affinity_terms(pod)
    if old is not None and new is not None:
        return ((not matches_all(terms.required_affinity, old) and matches_all(terms.required_affinity, new))
                or (matches_all(terms.required_anti_affinity, old)
                    and not matches_all(terms.required_anti_affinity, new)))
    if new is not None:
        return matches_all(terms.required_affinity, new)
    return old is not None and matches_all(terms.required_anti_affinity, old)


class InterPodAffinity:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        weight = args.get("hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT)
        if not isinstance(weight, int) or isinstance(weight, bool) or not 0 <= weight <= 100:
            raise ValueError(f"hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0, 100]")
        self.hard_pod_affinity_weight = weight
        self.ignore_preferred_terms_of_existing_pods = bool(args.get("ignorePreferredTermsOfExistingPods", False))

    # -- filtering ---------------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        terms = pod_affinity_terms(pod)
        if terms.error:
            return unschedulable(f"parsing pod: {terms.error}", resolvable=False)
        computed = pre_filter_state(pod, terms, snapshot.node_list, state.listers)
        if (not computed.existing_anti_affinity_counts and not computed.required_affinity
                and not computed.required_anti_affinity):
            return SKIP
        state.write(_PRE_FILTER_KEY, computed)
        return SUCCESS

    def add_pod(self, state: CycleState, pod: Pod, to_add: PodInfo, node: NodeInfo) -> Status:
        state.read(_PRE_FILTER_KEY).count_existing_pod(to_add, node.labels, 1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: Pod, to_remove: PodInfo, node: NodeInfo) -> Status:
        state.read(_PRE_FILTER_KEY).count_existing_pod(to_remove, node.labels, -1)
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        computed: PreFilterState = state.read(_PRE_FILTER_KEY)
        if not satisfies_pod_affinity(computed, node):
            return unschedulable(AFFINITY_REASON, resolvable=False)
        if not satisfies_pod_anti_affinity(computed, node):
            return unschedulable(ANTI_AFFINITY_REASON)
        if not satisfies_existing_pods_anti_affinity(computed, node):
            return unschedulable(EXISTING_ANTI_AFFINITY_REASON)
        return SUCCESS

    # -- scoring -----------------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        terms = pod_affinity_terms(pod)
        if terms.error:
            return Status(Code.ERROR, (terms.error,))
        has_constraints = bool(terms.preferred_affinity or terms.preferred_anti_affinity)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        listers = state.listers
        preferred = tuple(WeightedAffinityTerm(_merge_namespaces(w.term, listers), w.weight)
                          for w in terms.preferred_affinity)
        preferred_anti = tuple(WeightedAffinityTerm(_merge_namespaces(w.term, listers), w.weight)
                               for w in terms.preferred_anti_affinity)
        namespace_labels = listers.namespace_labels(PodView(pod).metadata.namespace)
        scores: ScoreMap = {}
        for node in state.snapshot.node_list:  # every node, as upstream's NodeInfos().List()
            labels = node.labels
            if not labels:
                continue
            existing_pods = list(node.pods.values()) if has_constraints else node.pods_with_affinity()
            for existing in existing_pods:
                _process_terms(scores, preferred, existing.pod, None, labels, 1)
                _process_terms(scores, preferred_anti, existing.pod, None, labels, -1)
                if self.hard_pod_affinity_weight > 0:
                    for term in existing.affinity.required_affinity:
                        _process_term(scores, term, self.hard_pod_affinity_weight, pod, namespace_labels, labels, 1)
                _process_terms(scores, existing.affinity.preferred_affinity, pod, namespace_labels, labels, 1)
                _process_terms(scores, existing.affinity.preferred_anti_affinity, pod, namespace_labels, labels, -1)
        if not scores:
            return SKIP
        state.write(_PRE_SCORE_KEY, PreScoreState(scores))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        """The sum of the node's topology pairs' scores: positive for affinity, negative for anti-affinity."""
        labels = node.labels
        return sum(by_value.get(labels[key], 0) for key, by_value in state.read(_PRE_SCORE_KEY).topology_score.items()
                   if key in labels)

    def normalize_scores(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        """Upstream NormalizeScore: (score - min) / (max - min) · 100, truncated; all 0 when they are equal."""
        if not scores:
            return
        lowest, highest = min(scores.values()), max(scores.values())
        spread = highest - lowest
        for name, score in scores.items():
            scores[name] = math.trunc(MAX_NODE_SCORE * ((score - lowest) / spread)) if spread > 0 else 0

