"""The TTL-after-finished controller (control/controllers/ttlafterfinished/controller.py): when a finished Job expires,
and that the expired one is deleted (Foreground, by UID) while an unexpired one is requeued."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.controllers.ttlafterfinished.controller import TTLAfterFinishedController, time_left
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.fake_clock import FakeClock
from tests.support.polling import wait_until

NOW = datetime(2024, 1, 1, 0, 16, 40, tzinfo=UTC)  # FakeClock's start
JOBS = resource_path("batch/v1", "jobs", namespace="ns")


def job(ttl: int | None, finished: str | None, *, kind: str = "Complete") -> dict:
    spec = {} if ttl is None else {"ttlSecondsAfterFinished": ttl}
    conditions = [] if finished is None else [{"type": kind, "status": "True", "lastTransitionTime": finished}]
    return {"metadata": {"name": "j", "namespace": "ns"}, "spec": spec, "status": {"conditions": conditions}}


@pytest.mark.parametrize(("the_job", "left"), [
    pytest.param(job(None, "2024-01-01T00:16:00Z"), None, id="no-ttl"),
    pytest.param(job(100, None), None, id="unfinished"),
    pytest.param(job(100, "2024-01-01T00:16:00Z"), 60.0, id="complete-60s-left"),
    pytest.param(job(30, "2024-01-01T00:16:00Z", kind="Failed"), -10.0, id="failed-expired"),
    pytest.param(job(0, "2024-01-01T00:16:40Z"), 0.0, id="zero-ttl"),
])
def test_time_left(the_job, left):
    assert time_left(the_job, NOW) == left


def test_expired_job_is_deleted_and_unexpired_requeued():
    clock = FakeClock()
    api = FakeAPIServer(clock=clock)
    client = api.client("harness")
    factory = InformerFactory(api.client("informers"))
    controller = TTLAfterFinishedController(api.client("ttl"), factory, clock=clock)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_sync(5)
        client.create(JOBS, {"metadata": {"name": "old"}, "spec": {"ttlSecondsAfterFinished": 10}})
        client.update(f"{JOBS}/old/status", {**client.get(f"{JOBS}/old"), "status": {"conditions": [
            {"type": "Complete", "status": "True", "lastTransitionTime": "2024-01-01T00:16:00Z"}]}})
        client.create(JOBS, {"metadata": {"name": "new"}, "spec": {"ttlSecondsAfterFinished": 100}})
        client.update(f"{JOBS}/new/status", {**client.get(f"{JOBS}/new"), "status": {"conditions": [
            {"type": "Complete", "status": "True", "lastTransitionTime": "2024-01-01T00:16:00Z"}]}})
        lister = factory.informer("batch/v1", "jobs").lister()
        assert wait_until(lambda: all((lister.get("ns", n) or {}).get("status") for n in ("old", "new")))
        controller.sync("ns/old")
        controller.sync("ns/new")
        old = client.get(f"{JOBS}/old")
        assert old["metadata"].get("deletionTimestamp") and old["metadata"]["finalizers"] == ["foregroundDeletion"]
        assert not client.get(f"{JOBS}/new")["metadata"].get("deletionTimestamp")
        [delete] = api.actions_of("ttl", "delete")
        assert delete.path == f"{JOBS}/old"
    finally:
        stop.set()
        controller.queue.shut_down()
        controller.recorder.shutdown(1)
