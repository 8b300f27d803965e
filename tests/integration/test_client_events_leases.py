"""The event recorder and leader election against a real API server on 127.0.0.1 (in a thread):
Events are created, counted up by PATCH, re-created after deletion and found the way `kubectl describe`
finds them; two electors on one Lease never lead together, hand over fast on release and after expiry
when the leader vanishes without releasing."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from control.client.events import EventRecorder
from control.client.leaderelection import LeaderElector
from control.client.rest import RESTClient
from tests.support.apiserver import running_server
from tests.support.polling import wait_until

LEASE = dict(lease_duration=2.0, renew_deadline=1.5, retry_period=0.3)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RESTClient]:
    with running_server(str(tmp_path_factory.mktemp("apiserver"))) as endpoint, \
            RESTClient.from_kubeconfig(endpoint.kubeconfig) as rest:
        yield rest


@pytest.fixture
def ns(client: RESTClient) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def events_about(client: RESTClient, namespace: str, name: str) -> list[dict]:
    return client.list(f"/api/v1/namespaces/{namespace}/events",
                       params={"fieldSelector": f"involvedObject.name={name}"})["items"]


def test_events_are_created_counted_and_found_by_field_selector(client, ns):
    pod = client.create(f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}})
    recorder = EventRecorder(client, component="test-kubelet", host="node-1")
    try:
        for _ in range(3):
            recorder.event(pod, "Warning", "BackOff", "Back-off restarting failed container")
        recorder.eventf(pod, "Normal", "Pulled", "Successfully pulled image %r", "busybox:1")
        recorder.event({"kind": "Pod", "namespace": ns, "name": "other"}, "Normal", "Scheduled", "elsewhere")
        assert recorder.flush(10)
        found = {event["reason"]: event for event in events_about(client, ns, "web")}
        assert set(found) == {"BackOff", "Pulled"}
        backoff = found["BackOff"]
        assert backoff["count"] == 3 and backoff["type"] == "Warning"
        assert backoff["involvedObject"]["uid"] == pod["metadata"]["uid"]
        assert backoff["involvedObject"]["kind"] == "Pod"
        assert backoff["source"] == {"component": "test-kubelet", "host": "node-1"}
        assert backoff["metadata"]["name"].startswith("web.")
        assert found["Pulled"]["message"] == "Successfully pulled image 'busybox:1'"
        assert [event["reason"] for event in events_about(client, ns, "other")] == ["Scheduled"]

        # deleted meanwhile: the next identical event's PATCH meets 404 and creates it again
        client.delete(f"/api/v1/namespaces/{ns}/events/{backoff['metadata']['name']}")
        recorder.event(pod, "Warning", "BackOff", "Back-off restarting failed container")
        assert recorder.flush(10)
        [again] = [event for event in events_about(client, ns, "web") if event["reason"] == "BackOff"]
        assert again["metadata"]["name"] == backoff["metadata"]["name"] and again["count"] == 4
        assert recorder.dropped == 0
    finally:
        recorder.shutdown(5)


def test_cluster_scoped_object_events_go_to_default(client):
    name = f"node-{uuid.uuid4().hex[:6]}"
    recorder = EventRecorder(client, component="test-node-controller")
    try:
        recorder.event({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": "u-1"}},
                       "Normal", "RegisteredNode", f"Node {name} event: Registered Node")
        assert recorder.flush(10)
        [event] = events_about(client, "default", name)
        assert event["involvedObject"]["kind"] == "Node" and event["count"] == 1
    finally:
        recorder.shutdown(5)


class Candidate:
    """One elector running in its own thread, recording when it led."""

    def __init__(self, client: RESTClient, namespace: str, identity: str, *, release: bool = True) -> None:
        self.leading = threading.Event()
        self.stopped = threading.Event()
        self.stop = threading.Event()
        self.elector = LeaderElector(client, namespace=namespace, name="controller", identity=identity,
                                     on_started_leading=lambda lost: self.leading.set(),
                                     on_stopped_leading=self.stopped.set, release_on_cancel=release, **LEASE)
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True)

    def start(self) -> Candidate:
        self.thread.start()
        return self

    def halt(self) -> None:
        self.stop.set()
        if self.thread.ident is not None:
            self.thread.join(10)
            assert not self.thread.is_alive()


def lease(client: RESTClient, namespace: str) -> dict:
    return client.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/controller")["spec"]


def test_exactly_one_leads_and_release_hands_over_quickly(client, ns):
    a, b = Candidate(client, ns, "a").start(), Candidate(client, ns, "b").start()
    try:
        assert wait_until(lambda: a.leading.is_set() or b.leading.is_set(), 10)
        deadline = time.monotonic() + 3  # both keep campaigning; never both lead
        while time.monotonic() < deadline:
            assert not (a.elector.is_leader() and b.elector.is_leader())
            time.sleep(0.02)
        leader, follower = (a, b) if a.elector.is_leader() else (b, a)
        assert not follower.leading.is_set()
        spec = lease(client, ns)
        assert spec["holderIdentity"] == leader.elector.identity and spec["leaseDurationSeconds"] == 2
        transitions = spec["leaseTransitions"]

        handed = time.monotonic()
        leader.halt()  # releases the Lease
        assert leader.stopped.is_set() and not leader.elector.is_leader()
        assert wait_until(follower.elector.is_leader, 5)
        assert time.monotonic() - handed < 1.5  # well before the 2 s lease would have expired
        spec = lease(client, ns)
        assert spec["holderIdentity"] == follower.elector.identity
        assert spec["leaseTransitions"] == transitions + 1
    finally:
        a.halt()
        b.halt()


def test_a_leader_that_vanishes_is_replaced_after_expiry(client, ns):
    a, b = Candidate(client, ns, "a", release=False), Candidate(client, ns, "b")
    a.start()
    try:
        assert wait_until(a.elector.is_leader, 10)
        b.start()
        time.sleep(1)
        assert not b.elector.is_leader()
        vanished = time.monotonic()
        a.halt()  # no release: the Lease still names a
        assert lease(client, ns)["holderIdentity"] == "a"
        assert wait_until(b.elector.is_leader, 10)
        waited = time.monotonic() - vanished
        assert 1.0 <= waited < 5.0  # b waited for the lease to expire on its own clock
        spec = lease(client, ns)
        assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
        b.halt()
        assert lease(client, ns)["holderIdentity"] == ""
    finally:
        a.halt()
        if b.thread.is_alive():
            b.halt()
