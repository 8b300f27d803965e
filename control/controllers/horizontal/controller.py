"""The horizontal pod autoscaler controller: every sync period, each HPA reads its target's `/scale`, asks
metrics.k8s.io for its pods' cpu/memory usage, computes the replicas (replica_calculator.py), stabilises
and limits them (behavior.py), writes the new count through `/scale`, and reports status and
the AbleToScale / ScalingActive / ScalingLimited conditions.

Upstream: pkg/controller/podautoscaler/horizontal.go (`reconcileAutoscaler`, `computeReplicasForMetrics`,
`computeStatusForResourceMetric(Generic)`, `validateAndParseSelector`, `setStatus`, `updateStatusIfNeeded`,
`setCondition`; the events SuccessfulRescale "New size: N; reason: R", FailedGetScale, FailedRescale,
FailedGetResourceMetric, FailedComputeMetricsReplicas, SelectorRequired, InvalidSelector) and
metrics/client.go (resource metrics from metrics.k8s.io PodMetrics by the scale's label selector).
Resync: each HPA is synced again `sync_period` seconds after its last sync (upstream
--horizontal-pod-autoscaler-sync-period, 15 s; the work queue's fixed-interval re-add).

Only Resource and ContainerResource metrics are computed (from metrics.k8s.io, which control/apiserver/
registry/metricsapi.py serves); Pods, Object and External metrics need a custom/external metrics API that is not
served, so they report FailedGetPodsMetric-style errors the way upstream does when those APIs are missing.
The target's resource is found from its apiVersion and kind through the API server's discovery document
(upstream's RESTMapper), kept per apiVersion.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from control.apimachinery.labels import SelectorError, parse_selector
from control.apimachinery.meta import format_timestamp, key_of, set_condition, split_key
from control.apimachinery.quantity import Quantity, QuantityError
from control.client.errors import ApiError
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.horizontal import behavior
from control.controllers.horizontal import replica_calculator as calc
from control.controllers.shared.base import APIClient, Controller
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

API_VERSION = "autoscaling/v2"
SYNC_PERIOD = 15.0  # upstream --horizontal-pod-autoscaler-sync-period
DEFAULT_WORKERS = 5  # upstream --concurrent-horizontal-pod-autoscaler-syncs
METRICS_PODS = "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods"


class MetricError(Exception):
    """One metric could not be computed: `reason` is the condition/event reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class HorizontalController(Controller):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs until `stop` is set."""

    name = "horizontalpodautoscaling"  # upstream's controller name (--controllers)

    def __init__(self, client: APIClient, informers: InformerFactory, *, sync_period: float = SYNC_PERIOD,
                 downscale_stabilization: float = behavior.DOWNSCALE_STABILIZATION,
                 settings: calc.Settings = calc.DEFAULT_SETTINGS, workers: int = DEFAULT_WORKERS,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        recorder = recorder or EventRecorder(client, component="horizontal-pod-autoscaler", clock=clock)
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.clock: Clock = clock or RealClock()
        self.sync_period = sync_period
        self.downscale_stabilization = downscale_stabilization
        self.settings = settings
        hpas, pods = informers.informer(API_VERSION, "horizontalpodautoscalers"), informers.informer("v1", "pods")
        self.hpas, self.pods = hpas.lister(), pods.lister()
        self._lock = threading.Lock()  # guards the three histories below (workers sync different keys)
        self.recommendations: dict[str, list[behavior.Recommendation]] = {}
        self.scale_up_events: dict[str, list[behavior.ScaleEvent]] = {}
        self.scale_down_events: dict[str, list[behavior.ScaleEvent]] = {}
        self._plurals: dict[tuple[str, str], str] = {}  # (apiVersion, kind) → plural with a scale subresource
        hpas.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.on_hpa_delete)

    def on_hpa_delete(self, obj: Mapping[str, Any]) -> None:
        key = key_of(obj)
        with self._lock:
            for history in (self.recommendations, self.scale_up_events, self.scale_down_events):
                history.pop(key, None)
        self.queue.add(key)

    # -- sync -------------------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        hpa = self.hpas.get(namespace, name)
        if hpa is None:
            return
        try:
            self._reconcile(key, copy.deepcopy(hpa))
        finally:
            self.queue.add_after(key, self.sync_period)

    def _scale_path(self, namespace: str, ref: Mapping[str, Any]) -> str:
        """The target's `/scale` path, its plural found in the discovery document of its apiVersion."""
        api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
        plural = self._plurals.get((api_version, kind))
        if plural is None:
            document = self.client.get("/api/v1" if api_version == "v1" else f"/apis/{api_version}")
            names = {entry.get("name") for entry in document.get("resources") or []}
            for entry in document.get("resources") or []:
                if entry.get("kind") == kind and "/" not in entry["name"] and f"{entry['name']}/scale" in names:
                    plural = str(entry["name"])
            if plural is None:
                raise ValueError(f"no matches for kind \"{kind}\" in group version \"{api_version}\" with a "
                                 f"scale subresource")
            self._plurals[(api_version, kind)] = plural
        return resource_path(api_version, plural, namespace=namespace, name=str(ref.get("name") or ""),
                             subresource="scale")

    def _condition(self, hpa: dict[str, Any], kind: str, status: bool, reason: str, message: str) -> None:
        conditions = hpa.setdefault("status", {}).setdefault("conditions", [])
        set_condition(conditions, {"type": kind, "status": "True" if status else "False", "reason": reason,
                                   "message": message}, now=self.clock.now())

    def _reconcile(self, key: str, hpa: dict[str, Any]) -> None:
        """reconcileAutoscaler (module notes)."""
        original = copy.deepcopy(hpa.get("status") or {})
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        namespace = hpa["metadata"]["namespace"]
        reference = f"{ref.get('kind')}/{namespace}/{ref.get('name')}"
        typed = {**hpa, "apiVersion": API_VERSION, "kind": "HorizontalPodAutoscaler"}
        try:
            scale_path = self._scale_path(namespace, ref)
            scale = self.client.get(scale_path)
        except (ApiError, ValueError) as exc:
            message = exc.message if isinstance(exc, ApiError) else str(exc)
            self.recorder.eventf(typed, "Warning", "FailedGetScale", "%s", message)
            self._condition(hpa, "AbleToScale", False, "FailedGetScale",
                            f"the HPA controller was unable to get the target's current scale: {message}")
            self._write_status(hpa, original)
            raise
        self._condition(hpa, "AbleToScale", True, "SucceededGetScale",
                        "the HPA controller was able to get the target's current scale")
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        minimum = int(spec.get("minReplicas") or 1)
        maximum = int(spec.get("maxReplicas") or 0)
        statuses: list[dict[str, Any]] = []
        rescale_reason = ""
        now = self.clock.now()
        if current == 0 and minimum != 0:
            desired, rescale = 0, False
            self._condition(hpa, "ScalingActive", False, "ScalingDisabled",
                            "scaling is disabled since the replica count of the target is zero")
        elif current > maximum:
            desired, rescale, rescale_reason = maximum, True, "Current number of replicas above Spec.MaxReplicas"
        elif current < minimum:
            desired, rescale, rescale_reason = minimum, True, "Current number of replicas below Spec.MinReplicas"
        else:
            try:
                proposed, metric_name, statuses = self._replicas_for_metrics(hpa, scale, now)
            except MetricError as exc:
                self._set_status(hpa, current, current, statuses, rescaled=False)
                self._write_status(hpa, original)
                self.recorder.eventf(typed, "Warning", "FailedComputeMetricsReplicas", "%s", str(exc))
                raise RuntimeError(f"failed to compute desired number of replicas based on listed metrics for "
                                   f"{reference}: {exc}") from exc
            desired = max(proposed, 0)
            if desired > current:
                rescale_reason = f"{metric_name} above target"
            elif desired < current:
                rescale_reason = "All metrics below target"
            desired = self._normalize(key, hpa, current, desired, minimum, maximum, now)
            rescale = desired != current
        if rescale:
            try:
                self.client.update(scale_path, {**scale, "spec": {**(scale.get("spec") or {}), "replicas": desired}})
            except ApiError as exc:
                self.recorder.eventf(typed, "Warning", "FailedRescale", "New size: %d; reason: %s; error: %s",
                                     desired, rescale_reason, exc.message)
                self._condition(hpa, "AbleToScale", False, "FailedUpdateScale",
                                f"the HPA controller was unable to update the target scale: {exc.message}")
                self._set_status(hpa, current, current, statuses, rescaled=False)
                self._write_status(hpa, original)
                raise
            self._condition(hpa, "AbleToScale", True, "SucceededRescale",
                            f"the HPA controller was able to update the target scale to {desired}")
            self.recorder.eventf(typed, "Normal", "SuccessfulRescale", "New size: %d; reason: %s", desired,
                                 rescale_reason)
            self._store_scale_event(key, spec.get("behavior"), current, desired, now)
            log.info("HPA %s: rescaled %s from %d to %d (%s)", key, reference, current, desired, rescale_reason)
        else:
            desired = current
        self._set_status(hpa, current, desired, statuses, rescaled=rescale)
        self._write_status(hpa, original)

    def _replicas_for_metrics(self, hpa: dict[str, Any], scale: Mapping[str, Any],
                              now: datetime) -> tuple[int, str, list[dict[str, Any]]]:
        """computeReplicasForMetrics: the highest proposal over the metrics that could be computed; all
        failing, or some failing on a would-be scale-down, is an error (with the first failure's condition)."""
        typed = {**hpa, "apiVersion": API_VERSION, "kind": "HorizontalPodAutoscaler"}
        selector_text = str((scale.get("status") or {}).get("selector") or "")
        if not selector_text:
            message = "selector is required"
            self.recorder.eventf(typed, "Warning", "SelectorRequired", "%s", message)
            self._condition(hpa, "ScalingActive", False, "InvalidSelector",
                            "the HPA target's scale is missing a selector")
            raise MetricError("InvalidSelector", message)
        try:
            selector = parse_selector(selector_text)
        except SelectorError as exc:
            self.recorder.eventf(typed, "Warning", "InvalidSelector", "couldn't convert selector into a "
                                 "corresponding internal selector object: %s", exc)
            self._condition(hpa, "ScalingActive", False, "InvalidSelector",
                            "the HPA target's scale has an invalid selector")
            raise MetricError("InvalidSelector", str(exc)) from exc
        spec_replicas = int((scale.get("spec") or {}).get("replicas") or 0)
        namespace = hpa["metadata"]["namespace"]
        pods = self.pods.list(namespace, selector)
        metrics = (hpa.get("spec") or {}).get("metrics") or []
        statuses: list[dict[str, Any]] = [{} for _ in metrics]
        replicas, name = 0, ""
        failures: list[MetricError] = []
        usage: dict[str, list[Any]] = {}
        for index, metric in enumerate(metrics):
            try:
                proposal, proposal_name, statuses[index] = self._replicas_for_metric(
                    metric, spec_replicas, namespace, selector_text, pods, usage, now)
            except MetricError as exc:
                failures.append(exc)
                self.recorder.eventf(typed, "Warning", exc.reason, "%s", str(exc))
                continue
            if replicas == 0 or proposal > replicas:
                replicas, name = proposal, proposal_name
        statuses = [status for status in statuses if status]
        if failures and (len(failures) >= len(metrics) or replicas < spec_replicas):
            first = failures[0]
            self._condition(hpa, "ScalingActive", False, first.reason,
                            f"the HPA was unable to compute the replica count: {first}")
            raise MetricError(first.reason, f"invalid metrics ({len(failures)} invalid out of {len(metrics)}), "
                                            f"first error is: {first}")
        self._condition(hpa, "ScalingActive", True, "ValidMetricFound",
                        f"the HPA was able to successfully calculate a replica count from {name}")
        return replicas, name, statuses

    def _replicas_for_metric(self, metric: Mapping[str, Any], current: int, namespace: str, selector: str,
                             pods: list[dict[str, Any]], usage: dict[str, list[Any]],
                             now: datetime) -> tuple[int, str, dict[str, Any]]:
        kind = metric.get("type")
        source_key = {"Resource": "resource", "ContainerResource": "containerResource"}.get(str(kind))
        if source_key is None:
            raise MetricError(f"FailedGet{kind}Metric", f"unable to get metric of type {kind}: no custom or "
                                                        f"external metrics API is served")
        source = metric.get(source_key) or {}
        resource, container = str(source.get("name") or ""), str(source.get("container") or "")
        target = source.get("target") or {}
        reason = "FailedGetResourceMetric" if source_key == "resource" else "FailedGetContainerResourceMetric"
        if "items" not in usage:
            try:
                usage["items"] = self.client.list(METRICS_PODS.format(namespace=namespace),
                                                  params={"labelSelector": selector}).get("items") or []
            except ApiError as exc:
                raise MetricError(reason, f"failed to get {resource} utilization: unable to get metrics for resource "
                                          f"{resource}: unable to fetch metrics from resource metrics API: "
                                          f"{exc.message}") from exc
        items = usage["items"]
        if container:
            items = [{**item, "containers": [c for c in item.get("containers") or [] if c.get("name") == container]}
                     for item in items]
        metrics = calc.pod_metrics(items, resource)
        what = "usage" if target.get("averageValue") is not None else "utilization"
        if not metrics:
            raise MetricError(reason, f"failed to get {resource} {what}: unable to get metrics for resource "
                                      f"{resource}: no metrics returned from resource metrics API")
        try:
            if target.get("averageValue") is not None:
                average = Quantity(str(target["averageValue"])).milli_value()
                proposal = calc.resource_replicas(current, pods, metrics, resource=resource, now=now,
                                                  target_average=average, container=container,
                                                  settings=self.settings)
                current_status: dict[str, Any] = {"averageValue": str(Quantity.from_milli(proposal.raw_average))}
                name = f"{resource} resource"
            else:
                proposal = calc.resource_replicas(current, pods, metrics, resource=resource, now=now,
                                                  target_utilization=int(target.get("averageUtilization") or 0),
                                                  container=container, settings=self.settings)
                current_status = {"averageUtilization": proposal.utilization,
                                  "averageValue": str(Quantity.from_milli(proposal.raw_average))}
                name = f"{resource} resource utilization (percentage of request)"
        except (calc.ReplicaCalculationError, QuantityError, ValueError) as exc:
            raise MetricError(reason, f"failed to get {resource} {what}: {exc}") from exc
        status: dict[str, Any] = {"type": kind, source_key: {"name": resource, "current": current_status}}
        if container:
            status[source_key]["container"] = container
        return proposal.replicas, name, status

    def _normalize(self, key: str, hpa: dict[str, Any], current: int, desired: int, minimum: int, maximum: int,
                   now: datetime) -> int:
        spec_behavior = (hpa.get("spec") or {}).get("behavior")
        with self._lock:
            history = self.recommendations.get(key, [])
            if spec_behavior is None:
                result, history = behavior.normalize(history, current=current, desired=desired, minimum=minimum,
                                                     maximum=maximum, now=now, window=self.downscale_stabilization)
            else:
                result, history = behavior.normalize_with_behavior(
                    history, self.scale_up_events.get(key, []), self.scale_down_events.get(key, []),
                    behavior=spec_behavior, current=current, desired=desired, minimum=minimum, maximum=maximum,
                    now=now, default_down_window=self.downscale_stabilization)
            self.recommendations[key] = history
        self._condition(hpa, "AbleToScale", True, result.able_reason, result.able_message)
        self._condition(hpa, "ScalingLimited", result.limited, result.limited_reason, result.limited_message)
        return result.replicas

    def _store_scale_event(self, key: str, spec_behavior: Mapping[str, Any] | None, before: int, after: int,
                           now: datetime) -> None:
        """storeScaleEvent: only an HPA with behavior keeps them (its rate policies read them)."""
        if spec_behavior is None or before == after:
            return
        up = after > before
        rules = spec_behavior.get("scaleUp" if up else "scaleDown")
        with self._lock:
            events = self.scale_up_events if up else self.scale_down_events
            events[key] = behavior.record_scale_event(events.get(key, []), abs(after - before), now=now,
                                                      period=behavior.longest_period(rules))

    def _set_status(self, hpa: dict[str, Any], current: int, desired: int, metrics: list[dict[str, Any]], *,
                    rescaled: bool) -> None:
        """setStatus: the counts, the current metrics, lastScaleTime on a rescale, the conditions kept."""
        previous = hpa.get("status") or {}
        status: dict[str, Any] = {"currentReplicas": current, "desiredReplicas": desired}
        if metrics:
            status["currentMetrics"] = metrics
        if rescaled:
            status["lastScaleTime"] = format_timestamp(self.clock.now())
        elif previous.get("lastScaleTime"):
            status["lastScaleTime"] = previous["lastScaleTime"]
        if previous.get("conditions"):
            status["conditions"] = previous["conditions"]
        generation = (hpa.get("metadata") or {}).get("generation")
        if generation is not None:
            status["observedGeneration"] = generation
        hpa["status"] = status

    def _write_status(self, hpa: dict[str, Any], original: Mapping[str, Any]) -> None:
        """updateStatusIfNeeded."""
        if hpa.get("status") == original:
            return
        metadata = hpa["metadata"]
        path = resource_path(API_VERSION, "horizontalpodautoscalers", namespace=metadata["namespace"],
                             name=metadata["name"], subresource="status")
        self.client.update(path, {**hpa, "apiVersion": API_VERSION, "kind": "HorizontalPodAutoscaler"})
