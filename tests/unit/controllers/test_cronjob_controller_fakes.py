"""CronJobController (control/controllers/cronjob/controller.py) against the shared fake API server on a fake clock:
nothing before the first scheduled time, one Job at it (named by the time, in status.active), a time never
started twice, a finished Job leaving `active` with lastSuccessfulTime, Replace deleting the running Job,
and the history limit pruning."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from control.apimachinery.meta import key_of
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.cronjob.controller import CronJobController
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock
from tests.support.polling import wait_until

CRONJOBS = resource_path("batch/v1", "cronjobs", namespace="ns")
JOBS = resource_path("batch/v1", "jobs", namespace="ns")


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock(start=0.0)  # 2024-01-01T00:00:00Z, on a minute boundary
        self.api = FakeAPIServer(clock=self.clock)
        self.client = self.api.client("harness")
        self.factory = InformerFactory(self.api.client("informers"))
        self.controller = CronJobController(self.api.client("cronjob"), self.factory, clock=self.clock)
        self.stop = threading.Event()
        self.factory.start(self.stop)
        assert self.factory.wait_for_sync(5)

    def close(self) -> None:
        self.stop.set()
        self.controller.queue.shut_down()
        self.controller.recorder.shutdown(1)

    def settle(self) -> None:
        def caught_up() -> bool:
            for plural in ("jobs", "cronjobs"):
                informer = self.factory.informer("batch/v1", plural)
                items = self.client.list(resource_path("batch/v1", plural))["items"]
                cached = {key: o["metadata"]["resourceVersion"] for key, o in informer.store.items().items()}
                if cached != {key_of(o): o["metadata"]["resourceVersion"] for o in items}:
                    return False
            return True
        assert wait_until(caught_up, interval=0.005)

    def sync(self) -> dict[str, Any]:
        self.settle()
        self.controller.sync("ns/cj")
        self.settle()
        return self.client.get(f"{CRONJOBS}/cj")

    def jobs(self) -> list[dict[str, Any]]:
        return self.client.list(JOBS)["items"]

    def finish(self, job: dict[str, Any], kind: str = "Complete") -> None:
        path = f"{JOBS}/{job['metadata']['name']}"
        fresh = self.client.get(path)
        now = self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        fresh["status"] = {"startTime": now, "conditions": [{"type": kind, "status": "True"}]}
        if kind == "Complete":
            fresh["status"]["completionTime"] = now
        self.client.update(f"{path}/status", fresh)


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness()
    try:
        yield h
    finally:
        h.close()


def create(harness: Harness, **spec: Any) -> None:
    harness.client.create(CRONJOBS, {"metadata": {"name": "cj"}, "spec": {
        "schedule": "* * * * *", "concurrencyPolicy": "Allow", "suspend": False, "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1, "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}, **spec}})


def test_runs_each_minute_once_and_tracks_status(harness):
    create(harness)
    harness.clock.step(30)
    assert "active" not in harness.sync().get("status", {}) and harness.jobs() == []
    harness.clock.step(31)  # 00:01:01
    cj = harness.sync()
    [job] = harness.jobs()
    assert job["metadata"]["name"] == "cj-28401121"  # 2024-01-01T00:01:00Z in unix minutes
    assert cj["status"]["lastScheduleTime"] == "2024-01-01T00:01:00Z"
    assert [r["name"] for r in cj["status"]["active"]] == ["cj-28401121"]
    harness.sync()
    assert len(harness.jobs()) == 1  # the same time is not started twice
    harness.finish(job)
    cj = harness.sync()
    assert "active" not in cj["status"] and cj["status"]["lastSuccessfulTime"] == "2024-01-01T00:01:01Z"
    assert harness.controller.recorder.flush(5)
    events = {(e["reason"], e["message"]) for e in harness.client.list(
        resource_path("v1", "events", namespace="ns"))["items"]}
    assert ("SuccessfulCreate", "Created job cj-28401121") in events


def test_replace_deletes_the_running_job(harness):
    create(harness, concurrencyPolicy="Replace")
    harness.clock.step(61)
    harness.sync()
    harness.clock.step(60)
    cj = harness.sync()
    names = [j["metadata"]["name"] for j in harness.jobs()]
    assert names == ["cj-28401122"] and [r["name"] for r in cj["status"]["active"]] == ["cj-28401122"]


def test_history_limit(harness):
    create(harness, successfulJobsHistoryLimit=1)
    for _ in range(3):
        harness.clock.step(60)
        harness.sync()
        harness.finish(harness.jobs()[-1])
        harness.clock.step(1)
    harness.sync()
    assert [j["metadata"]["name"] for j in harness.jobs()] == ["cj-28401123"]
