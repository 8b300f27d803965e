"""HorizontalController (control/controllers/horizontal/controller.py) against the fake API server with real informers;
the target's discovery document, its `/scale` and metrics.k8s.io are answered by a thin wrapper (the fake
server serves neither). Scale-up with events and conditions, the scale-down stabilisation window of the
HPA's behavior, a target without a selector, missing metrics. Workers are not run: the test syncs the key."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any

import pytest

from control.api.autoscaling import default_hpa
from control.apimachinery.meta import format_timestamp, key_of
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.horizontal.controller import HorizontalController
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock
from tests.support.polling import wait_until

HPAS = resource_path("autoscaling/v2", "horizontalpodautoscalers", namespace="ns")
PODS = resource_path("v1", "pods", namespace="ns")
SCALE = "/apis/apps/v1/namespaces/ns/deployments/web/scale"


class TargetAndMetrics:
    """The fake server's client, plus the Deployment's discovery entry, its Scale and the PodMetrics."""

    def __init__(self, inner: Any, clock: FakeClock) -> None:
        self.inner, self.clock = inner, clock
        self.replicas, self.selector = 2, "app=web"
        self.usage: dict[str, str] = {}  # pod name → cpu usage
        self.scale_writes: list[int] = []

    def get(self, path: str, *, params: Mapping[str, str] | None = None) -> dict:
        if path == "/apis/apps/v1":
            return {"resources": [{"name": "deployments", "kind": "Deployment"},
                                  {"name": "deployments/scale", "kind": "Scale"}]}
        if path == SCALE:
            return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "web"},
                    "spec": {"replicas": self.replicas}, "status": {"replicas": self.replicas,
                                                                    "selector": self.selector}}
        return self.inner.get(path, params=params)

    def list(self, path: str, *, params: Mapping[str, str] | None = None) -> dict:
        if path.startswith("/apis/metrics.k8s.io/"):
            stamp = format_timestamp(self.clock.now() - timedelta(seconds=2))
            return {"items": [{"metadata": {"name": name}, "timestamp": stamp, "window": "15s",
                               "containers": [{"name": "app", "usage": {"cpu": cpu, "memory": "1Mi"}}]}
                              for name, cpu in self.usage.items()]}
        return self.inner.list(path, params=params)

    def update(self, path: str, body: dict, *, params: Mapping[str, str] | None = None) -> dict:
        if path == SCALE:
            self.replicas = body["spec"]["replicas"]
            self.scale_writes.append(self.replicas)
            return body
        return self.inner.update(path, body, params=params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.api = FakeAPIServer(clock=self.clock)
        self.client = self.api.client("harness")
        self.target = TargetAndMetrics(self.api.client("hpa"), self.clock)
        self.factory = InformerFactory(self.api.client("informers"))
        self.controller = HorizontalController(self.target, self.factory, clock=self.clock)
        self.stop = threading.Event()
        self.factory.start(self.stop)
        assert self.factory.wait_for_sync(5)

    def close(self) -> None:
        self.stop.set()
        self.controller.queue.shut_down()
        self.controller.recorder.shutdown(1)

    def add_pods(self, *names: str) -> None:
        started = format_timestamp(self.clock.now() - timedelta(hours=1))
        for name in names:
            self.client.create(PODS, {"metadata": {"name": name, "labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "app", "resources": {
                                          "requests": {"cpu": "100m"}}}]}})
            pod = self.client.get(f"{PODS}/{name}")
            pod["status"] = {"phase": "Running", "startTime": started, "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": started}]}
            self.client.update(f"{PODS}/{name}/status", pod)

    def create_hpa(self, **spec: Any) -> None:
        hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                        "maxReplicas": 5, "metrics": [{"type": "Resource", "resource": {
                            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}], **spec}}
        default_hpa(hpa)
        self.client.create(HPAS, hpa)

    def sync(self) -> dict[str, Any]:
        def caught_up() -> bool:
            for version, plural in (("v1", "pods"), ("autoscaling/v2", "horizontalpodautoscalers")):
                informer = self.factory.informer(version, plural)
                items = self.client.list(resource_path(version, plural))["items"]
                cached = {k: o["metadata"]["resourceVersion"] for k, o in informer.store.items().items()}
                if cached != {key_of(o): o["metadata"]["resourceVersion"] for o in items}:
                    return False
            return True
        assert wait_until(caught_up, interval=0.005)
        self.controller.sync("ns/web")
        return self.client.get(f"{HPAS}/web")

    def events(self) -> list[tuple[str, str]]:
        self.controller.recorder.flush(5)
        return sorted((e["reason"], e["message"])
                      for e in self.client.list(resource_path("v1", "events", namespace="ns"))["items"])


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    try:
        yield harness
    finally:
        harness.close()


def conditions(hpa: dict) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in hpa["status"]["conditions"]}


def test_scale_up_then_down_after_the_stabilisation_window(h: Harness) -> None:
    h.add_pods("a", "b")
    h.target.usage = {"a": "150m", "b": "150m"}
    h.create_hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 5}})
    hpa = h.sync()
    assert h.target.scale_writes == [5]  # 300 % of requests for a 50 % target: 12 wanted, max 5
    assert hpa["status"]["currentReplicas"] == 2 and hpa["status"]["desiredReplicas"] == 5
    assert hpa["status"]["currentMetrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "current": {"averageUtilization": 150, "averageValue": "150m"}}}]
    assert conditions(hpa) == {"AbleToScale": ("True", "SucceededRescale"),
                               "ScalingActive": ("True", "ValidMetricFound"),
                               "ScalingLimited": ("True", "TooManyReplicas")}
    assert ("SuccessfulRescale", "New size: 5; reason: cpu resource utilization (percentage of request) above "
                                 "target") in h.events()
    h.add_pods("c", "d", "e")
    h.target.usage = {name: "5m" for name in "abcde"}
    h.clock.step(3)
    hpa = h.sync()
    assert h.target.scale_writes == [5]  # within the 5 s window the earlier recommendation holds
    assert conditions(hpa)["AbleToScale"] == ("True", "ScaleDownStabilized")
    h.clock.step(3)
    hpa = h.sync()
    assert h.target.scale_writes == [5, 1]
    assert ("SuccessfulRescale", "New size: 1; reason: All metrics below target") in h.events()
    assert hpa["status"]["desiredReplicas"] == 1 and hpa["status"].get("lastScaleTime")


def test_within_tolerance_nothing_changes(h: Harness) -> None:
    h.add_pods("a", "b")
    h.target.usage = {"a": "52m", "b": "53m"}
    h.create_hpa()
    hpa = h.sync()
    assert h.target.scale_writes == [] and hpa["status"]["desiredReplicas"] == 2


def test_no_selector_and_no_metrics_are_reported(h: Harness) -> None:
    h.add_pods("a")
    h.create_hpa()
    h.target.selector = ""
    with pytest.raises(RuntimeError, match="selector is required"):
        h.sync()
    assert conditions(h.client.get(f"{HPAS}/web"))["ScalingActive"] == ("False", "InvalidSelector")
    h.target.selector = "app=web"
    with pytest.raises(RuntimeError, match="no metrics returned from resource metrics API"):
        h.sync()
    hpa = h.client.get(f"{HPAS}/web")
    assert conditions(hpa)["ScalingActive"] == ("False", "FailedGetResourceMetric")
    assert {reason for reason, _ in h.events()} >= {"SelectorRequired", "FailedGetResourceMetric",
                                                    "FailedComputeMetricsReplicas"}
