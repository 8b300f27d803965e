"""A pod's inter-pod (anti-)affinity terms, parsed once when the scheduler learns of the pod, so filters and
scores match selectors instead of re-reading wire dicts per node.

Upstream: pkg/scheduler/framework/types.go (`AffinityTerm` with `Matches`, `WeightedAffinityTerm`,
`newAffinityTerm`, `getNamespacesFromPodAffinityTerm`, `PodInfo.Update` filling RequiredAffinityTerms,
RequiredAntiAffinityTerms, PreferredAffinityTerms, PreferredAntiAffinityTerms) and metav1
`LabelSelectorAsSelector` (a missing labelSelector selects nothing, `{}` everything).

A term applies to the namespaces it lists, or — with neither `namespaces` nor `namespaceSelector` — to its
own pod's namespace; `namespaceSelector` adds the namespaces whose labels match (`{}`: every namespace).
Only `requiredDuringSchedulingIgnoredDuringExecution` and `preferredDuringScheduling…` exist upstream, so
only they are read. A term list with an invalid selector is left empty and its error kept: the pod being
scheduled is then UnschedulableAndUnresolvable (InterPodAffinity's PreFilter), as upstream's "parsing pod".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from control.api.typed.core import Pod as PodView
from control.apimachinery.labels import NOTHING, Selector, SelectorError, selector_from_label_selector

Pod = Mapping[str, Any]


@dataclass(frozen=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector

    def matches(self, pod: Pod, namespace_labels: Mapping[str, str] | None) -> bool:
        """Upstream AffinityTerm.Matches: `pod` is in one of the term's namespaces (listed, or selected by
        `namespace_labels`, the labels of the pod's namespace) and its labels match the selector."""
        metadata = PodView(pod).metadata
        if metadata.namespace in self.namespaces or self.namespace_selector.matches(namespace_labels or {}):
            return self.selector.matches(metadata.labels)
        return False

    def with_namespaces(self, names: set[str]) -> AffinityTerm:
        """The term with `namespaceSelector` unrolled into `namespaces` (upstream
        mergeAffinityTermNamespacesIfNotEmpty sets the selector to Nothing afterwards)."""
        return AffinityTerm(self.namespaces | names, self.selector, self.topology_key, NOTHING)


@dataclass(frozen=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True)
class PodAffinityTerms:
    """Upstream PodInfo's four term lists, plus whether the pod has pod (anti-)affinity at all
    (NodeInfo.PodsWithAffinity) and the parse errors."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    has_affinity: bool = False
    error: str = ""


NO_TERMS = PodAffinityTerms()


def _term(pod: Pod, raw: Mapping[str, Any]) -> AffinityTerm:
    namespaces = raw.get("namespaces") or []
    raw_namespace_selector = raw.get("namespaceSelector")
    if not namespaces and raw_namespace_selector is None:
        namespaces = [PodView(pod).metadata.namespace]
    return AffinityTerm(frozenset(namespaces), selector_from_label_selector(raw.get("labelSelector")),
                        str(raw.get("topologyKey") or ""), selector_from_label_selector(raw_namespace_selector))


def _terms(pod: Pod, raw: list[Any], errors: list[str]) -> tuple[AffinityTerm, ...]:
    try:
        return tuple(_term(pod, term or {}) for term in raw)
    except (SelectorError, AttributeError, TypeError) as exc:
        errors.append(str(exc))
        return ()


def _weighted(pod: Pod, raw: list[Any], errors: list[str]) -> tuple[WeightedAffinityTerm, ...]:
    try:
        return tuple(WeightedAffinityTerm(_term(pod, term.get("podAffinityTerm") or {}), int(term.get("weight") or 0))
                     for term in raw)
    except (SelectorError, AttributeError, TypeError, ValueError) as exc:
        errors.append(str(exc))
        return ()


def pod_affinity_terms(pod: Pod) -> PodAffinityTerms:
    """The parsed terms of `spec.affinity.podAffinity` and `.podAntiAffinity` (module notes)."""
    affinity = PodView(pod).spec.affinity or {}
    if not isinstance(affinity, Mapping):
        return NO_TERMS
    pod_affinity = affinity.get("podAffinity")
    anti_affinity = affinity.get("podAntiAffinity")
    if pod_affinity is None and anti_affinity is None:
        return NO_TERMS
    pod_affinity, anti_affinity = pod_affinity or {}, anti_affinity or {}
    errors: list[str] = []
    return PodAffinityTerms(
        required_affinity=_terms(pod, pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or [], errors),
        required_anti_affinity=_terms(pod, anti_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or [],
                                      errors),
        preferred_affinity=_weighted(pod, pod_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or [],
                                     errors),
        preferred_anti_affinity=_weighted(pod, anti_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
                                          or [], errors),
        has_affinity=True, error="; ".join(errors))
