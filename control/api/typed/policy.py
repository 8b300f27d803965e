"""Typed views of policy/v1: PodDisruptionBudget.

Upstream: k8s.io/api/policy/v1/types.go. `minAvailable` and `maxUnavailable` are IntOrString (a count or
a percentage) and read as None when absent.
"""

from __future__ import annotations

from control.api.typed.base import View, int_or_string, integer, mapping, nested, nested_list, optional_string, pointer
from control.api.typed.meta import Condition, LabelSelector, TypedObject


class PodDisruptionBudgetSpec(View):
    __slots__ = ()
    min_available = int_or_string("minAvailable")
    max_unavailable = int_or_string("maxUnavailable")
    selector = pointer("selector", LabelSelector)
    unhealthy_pod_eviction_policy = optional_string("unhealthyPodEvictionPolicy")


class PodDisruptionBudgetStatus(View):
    __slots__ = ()
    observed_generation = integer("observedGeneration")
    disrupted_pods = mapping("disruptedPods")
    disruptions_allowed = integer("disruptionsAllowed")
    current_healthy = integer("currentHealthy")
    desired_healthy = integer("desiredHealthy")
    expected_pods = integer("expectedPods")
    conditions = nested_list("conditions", Condition)


class PodDisruptionBudget(TypedObject):
    __slots__ = ()
    spec = nested("spec", PodDisruptionBudgetSpec)
    status = nested("status", PodDisruptionBudgetStatus)
