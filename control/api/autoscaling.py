"""HorizontalPodAutoscaler: autoscaling/v2 defaults (the storage version), the autoscaling/v1 view converted
from and to it, and the scaling-rule defaults the controller and the API server share.

Upstream: pkg/apis/autoscaling/v2/defaults.go (`SetDefaults_HorizontalPodAutoscaler`: minReplicas 1, a cpu
Utilization 80 metric when there is none; `SetDefaults_HorizontalPodAutoscalerBehavior` with
`GenerateHPAScaleUpRules` / `GenerateHPAScaleDownRules`: scale up Max of 4 pods or 100 % per 15 s with no
stabilisation, scale down Max of 100 % per 15 s, its stabilisation window left unset so the controller's
`--horizontal-pod-autoscaler-downscale-stabilization` (300 s) applies) and pkg/apis/autoscaling/v1/
conversion.go (v1 keeps only the cpu utilisation target; other metrics, the behaviour, current metrics
and conditions travel in `autoscaling.alpha.kubernetes.io/*` annotations so a v1 round trip loses nothing).

Departure: the annotations hold autoscaling/v2 JSON (upstream writes the older v2beta1-shaped structs).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

DEFAULT_CPU_UTILIZATION = 80  # autoscaling.DefaultCPUUtilization
METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"

V1, V2 = "autoscaling/v1", "autoscaling/v2"


def default_scale_up_rules() -> dict[str, Any]:
    return {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                         {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def default_scale_down_rules() -> dict[str, Any]:
    return {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _with_defaults(rules: Mapping[str, Any] | None, defaults: dict[str, Any]) -> dict[str, Any]:
    """copyHPAScalingRules: every field the user set wins over the default."""
    for key in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
        if rules is not None and rules.get(key) is not None:
            defaults[key] = copy.deepcopy(rules[key])
    return defaults


def cpu_utilization_metric(percent: int) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                       "averageUtilization": percent}}}


def default_hpa(obj: dict[str, Any]) -> None:
    """SetDefaults_HorizontalPodAutoscaler (+ Behavior), in place, on a v2 object."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [cpu_utilization_metric(DEFAULT_CPU_UTILIZATION)]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _with_defaults(behavior.get("scaleUp"), default_scale_up_rules())
        behavior["scaleDown"] = _with_defaults(behavior.get("scaleDown"), default_scale_down_rules())


# -- the autoscaling/v1 view --------------------------------------------------------------------------


def _is_cpu_utilization(metric: Mapping[str, Any]) -> bool:
    resource = metric.get("resource") or {}
    return (metric.get("type") == "Resource" and resource.get("name") == "cpu"
            and (resource.get("target") or {}).get("type") == "Utilization")


def _annotate(annotations: dict[str, str], key: str, value: Any) -> None:
    if value:
        annotations[key] = json.dumps(value, separators=(",", ":"))


def to_v1(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 view of a stored autoscaling/v2 HorizontalPodAutoscaler."""
    v2 = copy.deepcopy(dict(obj))
    spec, status = v2.get("spec") or {}, v2.get("status") or {}
    metadata = dict(v2.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    v1_spec: dict[str, Any] = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    others = []
    for metric in spec.get("metrics") or []:
        if _is_cpu_utilization(metric) and "targetCPUUtilizationPercentage" not in v1_spec:
            v1_spec["targetCPUUtilizationPercentage"] = metric["resource"]["target"].get("averageUtilization")
        else:
            others.append(metric)
    _annotate(annotations, METRICS_ANNOTATION, others)
    _annotate(annotations, BEHAVIOR_ANNOTATION, spec.get("behavior"))
    v1_status: dict[str, Any] = {k: status[k] for k in ("observedGeneration", "lastScaleTime", "currentReplicas",
                                                          "desiredReplicas") if k in status}
    current_others = []
    for metric in status.get("currentMetrics") or []:
        resource = metric.get("resource") or {}
        utilization = (resource.get("current") or {}).get("averageUtilization")
        if metric.get("type") == "Resource" and resource.get("name") == "cpu" and utilization is not None:
            v1_status["currentCPUUtilizationPercentage"] = utilization
        else:
            current_others.append(metric)
    _annotate(annotations, CURRENT_METRICS_ANNOTATION, current_others)
    _annotate(annotations, CONDITIONS_ANNOTATION, status.get("conditions"))
    if annotations:
        metadata["annotations"] = annotations
    result = {"apiVersion": V1, "kind": "HorizontalPodAutoscaler", "metadata": metadata, "spec": v1_spec}
    if "status" in v2:
        result["status"] = v1_status
    return result


def _annotation_json(annotations: dict[str, str], key: str) -> Any:
    text = annotations.pop(key, None)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def from_v1(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The autoscaling/v2 object a v1 write stands for (the annotations of to_v1 folded back in)."""
    v1 = copy.deepcopy(dict(obj))
    metadata = dict(v1.get("metadata") or {}) if isinstance(v1.get("metadata"), dict) else v1.get("metadata")
    annotations = dict((metadata or {}).get("annotations") or {}) if isinstance(metadata, dict) else {}
    spec: dict[str, Any] = v1["spec"] if isinstance(v1.get("spec"), dict) else {}
    status: dict[str, Any] | None = v1["status"] if isinstance(v1.get("status"), dict) else None
    v2_spec: dict[str, Any] = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    metrics = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append(cpu_utilization_metric(spec["targetCPUUtilizationPercentage"]))
    metrics += [m for m in _annotation_json(annotations, METRICS_ANNOTATION) or [] if isinstance(m, dict)]
    if metrics:
        v2_spec["metrics"] = metrics
    if isinstance(behavior := _annotation_json(annotations, BEHAVIOR_ANNOTATION), dict):
        v2_spec["behavior"] = behavior
    current = _annotation_json(annotations, CURRENT_METRICS_ANNOTATION) or []
    conditions = _annotation_json(annotations, CONDITIONS_ANNOTATION)
    result: dict[str, Any] = {**{k: v for k, v in v1.items() if k not in ("apiVersion", "kind", "spec", "status")},
                              "apiVersion": V2, "kind": "HorizontalPodAutoscaler", "spec": v2_spec}
    if isinstance(metadata, dict):
        metadata = {k: v for k, v in metadata.items() if k != "annotations"}
        if annotations:
            metadata["annotations"] = annotations
        result["metadata"] = metadata
    if status is not None:
        v2_status: dict[str, Any] = {k: status[k] for k in ("observedGeneration", "lastScaleTime", "currentReplicas",
                                            "desiredReplicas") if k in status}
        current_metrics = []
        if status.get("currentCPUUtilizationPercentage") is not None:
            current_metrics.append({"type": "Resource", "resource": {
                "name": "cpu", "current": {"averageUtilization": status["currentCPUUtilizationPercentage"]}}})
        current_metrics += [m for m in current if isinstance(m, dict)]
        if current_metrics:
            v2_status["currentMetrics"] = current_metrics
        if isinstance(conditions, list):
            v2_status["conditions"] = conditions
        result["status"] = v2_status
    return result
