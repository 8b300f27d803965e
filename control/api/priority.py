"""Pod priority: the PriorityClass rules the API server enforces and the scheduler reads.

Upstream: pkg/apis/scheduling/types.go (HighestUserDefinablePriority 1e9, SystemCriticalPriority 2e9, the
`system-` prefix, DefaultPriorityWhenNoDefaultClassExists 0), pkg/apis/scheduling/v1/helpers.go (the two
system classes, `IsKnownSystemPriorityClass`), plugin/pkg/admission/priority/admission.go (the Priority
admission plugin: `admitPod` on pod create, `validatePriorityClass` on class create/update,
`getDefaultPriorityClass`) and k8s.io/component-helpers/scheduling/corev1 `PodPriority`.

The admission decisions are pure functions over the pod (or class) and the stored classes; they return
the Forbidden message upstream gives, or None, so control/apiserver/admission/plugins.py only reads and raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"
DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS = 0
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)

Obj = Mapping[str, Any]

# Created by the API server at start-up (control/apiserver/controlplane/bootstrap.py) and never deletable.
SYSTEM_PRIORITY_CLASSES: tuple[dict[str, Any], ...] = (
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
     "metadata": {"name": SYSTEM_NODE_CRITICAL}, "value": SYSTEM_CRITICAL_PRIORITY + 1000,
     "description": "Used for system critical pods that must not be moved from their current node."},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
     "metadata": {"name": SYSTEM_CLUSTER_CRITICAL}, "value": SYSTEM_CRITICAL_PRIORITY,
     "description": "Used for system critical pods that must run in the cluster, but can be moved to another "
                    "node if necessary."},
)
SYSTEM_PRIORITY_CLASS_NAMES = frozenset(pc["metadata"]["name"] for pc in SYSTEM_PRIORITY_CLASSES)


def pod_priority(pod: Obj) -> int:
    """`spec.priority`, 0 when unset (upstream corev1helpers.PodPriority)."""
    value = (pod.get("spec") or {}).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def preemption_policy(pod: Obj) -> str:
    """`spec.preemptionPolicy`; unset means PreemptLowerPriority (the API's documented default)."""
    return (pod.get("spec") or {}).get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY


def _name(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


def _value(pc: Obj) -> int:
    value = pc.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def known_system_class_error(name: str, value: int, global_default: bool) -> str | None:
    """Upstream IsKnownSystemPriorityClass: None if `name` is a system class with exactly its value and
    globalDefault false, else why not."""
    for system in SYSTEM_PRIORITY_CLASSES:
        if _name(system) == name:
            if system["value"] != value:
                return f"value of {name} PriorityClass must be {system['value']}"
            if global_default:
                return f"globalDefault of {name} PriorityClass must be false"
            return None
    return f"{name} is not a known system priority class"


def default_priority_class(classes: Iterable[Obj]) -> Obj | None:
    """The globalDefault class; of several (a race let two in), the one with the lowest value."""
    found: Obj | None = None
    for pc in classes:
        if pc.get("globalDefault") is True and (found is None or _value(found) > _value(pc)):
            found = pc
    return found


def admit_pod(spec: dict[str, Any], classes: Iterable[Obj]) -> str | None:
    """Upstream admitPod on create, in place on the pod's `spec`: fill priorityClassName (from the default
    class), priority and preemptionPolicy; returns the Forbidden message for an unknown class or a
    priority/preemptionPolicy the client set differently from its class."""
    class_name = spec.get("priorityClassName") or ""
    if not isinstance(class_name, str):
        return None  # not a pod upstream's decoder would build: validation reports the field
    by_name = {_name(pc): pc for pc in classes}
    if not class_name:
        found = default_priority_class(by_name.values())
        if found is not None:
            spec["priorityClassName"] = _name(found)
            priority, policy = _value(found), found.get("preemptionPolicy")
        else:
            priority, policy = DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, PREEMPT_LOWER_PRIORITY
    else:
        pc = by_name.get(class_name)
        if pc is None:
            return f"no PriorityClass with name {class_name} was found"
        priority, policy = _value(pc), pc.get("preemptionPolicy")
    given = spec.get("priority")
    if given is not None and given != priority:
        return (f"the integer value of priority ({given}) must not be provided in pod spec; priority admission "
                f"controller computed {priority} from the given PriorityClass name")
    spec["priority"] = priority
    if policy is not None:
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            return (f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod spec; "
                    f"priority admission controller computed {policy} from the given PriorityClass name")
        spec["preemptionPolicy"] = policy
    return None


def keep_on_update(spec: dict[str, Any], old_spec: Mapping[str, Any]) -> None:
    """Upstream admitPod on update: a pod written back without priority/preemptionPolicy keeps the stored
    ones (validation refuses any other change of them)."""
    for key in ("priority", "preemptionPolicy"):
        if spec.get(key) is None and old_spec.get(key) is not None:
            spec[key] = old_spec[key]


def check_global_default(pc: Obj, classes: Iterable[Obj], *, update: bool) -> str | None:
    """Upstream validatePriorityClass: a class may become globalDefault only while no other one is."""
    if pc.get("globalDefault") is not True:
        return None
    found = default_priority_class(classes)
    if found is None or (update and _name(found) == _name(pc)):
        return None
    return f"PriorityClass {_name(found)} is already marked as default. Only one default can exist"
