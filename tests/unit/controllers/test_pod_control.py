"""The shared pod control (control/controllers/shared/pod_control.py) against the fake API server: the
creates and deletes of one round with upstream's events, the expectations set once before the writes and
lowered for writes the informer will never report, slow start stopping after a failed batch, a namespace
being terminated, and both flavours of expectations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from control.apimachinery.meta import key_of
from control.client.errors import NAMESPACE_TERMINATING_CAUSE, error_from_status
from control.client.events import EventRecorder
from control.client.paths import resource_path
from control.controllers.shared.expectations import ControllerExpectations, UIDTrackingControllerExpectations
from control.controllers.shared.pod_control import PodControl
from tests.support.fake_apiserver import Action, FakeAPIServer, api_error
from tests.support.fake_clock import FakeClock

KEY = "ns/web"
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
         "metadata": {"name": "web", "namespace": "ns", "uid": "u-web"}}
PODS = resource_path("v1", "pods", namespace="ns")


def pod_body(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "web-", "labels": {"app": "web"} if labels is None else labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


class Harness:
    def __init__(self, *, uid_tracking: bool) -> None:
        self.clock = FakeClock()
        self.api = FakeAPIServer(clock=self.clock)
        self.client = self.api.client("harness")
        self.recorder = EventRecorder(self.api.client("events"), component="replicaset-controller",
                                      clock=self.clock)
        plain = ControllerExpectations(clock=self.clock)
        self.expectations: Any = UIDTrackingControllerExpectations(plain) if uid_tracking else plain
        self.control = PodControl(self.api.client("rs"), self.recorder, self.expectations, name="replicaset")

    def pods(self) -> list[dict[str, Any]]:
        return self.client.list(PODS)["items"]

    def events(self) -> list[tuple[str, str, str]]:
        self.recorder.flush(5)
        items = self.client.list(resource_path("v1", "events", namespace="ns"))["items"]
        return sorted((e["type"], e["reason"], e["message"]) for e in items)

    def counts(self) -> tuple[int, int] | None:
        record = self.expectations.get_expectations(KEY)
        return None if record is None else (record.add, record.delete)


@pytest.fixture(params=[True, False], ids=["uid-tracking", "plain"])
def harness(request) -> Iterator[Harness]:
    h = Harness(uid_tracking=request.param)
    try:
        yield h
    finally:
        h.recorder.shutdown(1)


def test_creates_each_pod_with_an_event_and_expects_them(harness):
    writes = harness.control.sync_pods(KEY, OWNER, create=[pod_body() for _ in range(3)])
    pods = harness.pods()
    assert (writes.created, writes.deleted, writes.error) == (3, 0, None) and len(pods) == 3
    assert harness.counts() == (3, 0)  # the informer's handlers lower it as they see the pods
    assert harness.events() == sorted(("Normal", "SuccessfulCreate", f"Created pod: {p['metadata']['name']}")
                                      for p in pods)
    assert {e["source"]["component"] for e in harness.client.list(resource_path("v1", "events"))["items"]} == {
        "replicaset-controller"}


def test_nothing_to_do_leaves_the_expectations_alone(harness):
    harness.expectations.expect_creations(KEY, 2)
    assert harness.control.sync_pods(KEY, OWNER).error is None
    assert harness.counts() == (2, 0) and harness.api.actions_of("rs") == []


def test_a_failed_batch_stops_slow_start_and_unexpects_the_rest(harness):
    """Batches 1, 2, 4: the second create fails, so the third batch is never tried; the failed create and
    the four untried ones are observed by the control itself, leaving the two made."""
    harness.api.fail_next(None, api_error(403, "Forbidden", "exceeded quota"), verb="create", client="rs")
    writes = harness.control.sync_pods(KEY, OWNER, create=[pod_body() for _ in range(7)])
    assert writes.created == 2 and writes.error is not None and writes.error.message == "exceeded quota"
    assert len(harness.pods()) == 2
    assert harness.counts() == (2, 0)
    assert ("Warning", "FailedCreate", "Error creating: exceeded quota") in harness.events()


def test_a_terminating_namespace_is_no_failure_and_records_nothing(harness):
    terminating = error_from_status(403, {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403, "reason": "Forbidden",
        "message": "unable to create new content in namespace ns because it is being terminated",
        "details": {"causes": [{"reason": NAMESPACE_TERMINATING_CAUSE, "message": "namespace ns is terminating"}]}})
    harness.api.fail_next(terminating, verb="create", client="rs")
    writes = harness.control.sync_pods(KEY, OWNER, create=[pod_body()])
    assert (writes.created, writes.error) == (1, None) and harness.pods() == []
    assert harness.events() == []


def test_a_pod_without_labels_is_refused_before_the_write(harness):
    writes = harness.control.sync_pods(KEY, OWNER, create=[pod_body(labels={})])
    assert isinstance(writes.error, ValueError) and str(writes.error) == "unable to create pods, no labels"
    assert harness.api.actions_of("rs", "create") == [] and harness.counts() == (0, 0)


def test_deletes_with_events_and_counts_a_pod_already_gone_as_neither(harness):
    made = [harness.client.create(PODS, pod_body()) for _ in range(3)]
    harness.client.delete(f"{PODS}/{made[0]['metadata']['name']}")  # someone else was faster
    doomed = made[1]["metadata"]["name"]

    def fail_one(action: Action) -> None:
        if action.verb == "delete" and action.client == "rs" and action.path.endswith(f"/{doomed}"):
            raise api_error(500, "InternalError", "etcd timeout")

    harness.api.prepend_reactor(fail_one)
    writes = harness.control.sync_pods(KEY, OWNER, delete=made)
    assert writes.deleted == 1 and writes.error is not None and writes.error.message == "etcd timeout"
    events = harness.events()
    assert ("Warning", "FailedDelete", "Error deleting: etcd timeout") in events
    assert [e[1] for e in events].count("SuccessfulDelete") == 1
    # The gone pod and the failed delete are observed here; only the pod really deleted is left to see.
    assert harness.counts() == (0, 1)


def test_the_uid_tracking_flavour_waits_for_exactly_the_pods_it_deleted():
    h = Harness(uid_tracking=True)
    try:
        made = [h.client.create(PODS, pod_body()) for _ in range(2)]
        h.control.sync_pods(KEY, OWNER, delete=made)
        assert h.expectations.get_deleting(KEY) == {key_of(p) for p in made}
        h.expectations.deletion_observed(KEY, "ns/someone-else")
        assert h.counts() == (0, 2)
        for pod in made:
            h.expectations.deletion_observed(KEY, key_of(pod))
        assert h.expectations.satisfied_expectations(KEY)
    finally:
        h.recorder.shutdown(1)


def test_creates_and_deletes_of_one_round_share_one_record():
    """The DaemonSet's syncNodes: both kinds in one call, one SetExpectations before either."""
    h = Harness(uid_tracking=False)
    try:
        old = h.client.create(PODS, pod_body())
        writes = h.control.sync_pods(KEY, OWNER, create=[pod_body(), pod_body()], delete=[old])
        assert (writes.created, writes.deleted, writes.error) == (2, 1, None)
        assert h.counts() == (2, 1)
        assert [a.verb for a in h.api.actions_of("rs", "create", "delete")] == ["create", "create", "delete"]
    finally:
        h.recorder.shutdown(1)
