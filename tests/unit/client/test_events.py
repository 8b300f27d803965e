"""The event recorder and its correlator against a fake API client and a stepped clock
(upstream behaviour: client-go tools/record event.go and events_cache.go)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

from control.client.errors import Invalid
from control.client.events import EventRecorder, object_reference
from control.client.events_cache import COMBINED_PREFIX, EventCorrelator, TokenBucket, event_name
from tests.support.fake_apiserver import Action, FakeAPIServer
from tests.support.fake_clock import FakeClock

T0 = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web", "namespace": "prod", "uid": "u-1", "resourceVersion": "7"}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u-2"}}


class Server:
    """The shared fake API server as these tests read it: the recorder's calls as (verb, path, body), the
    stored Events, failures for its next calls, and a gate that holds creates (a hanging server)."""

    def __init__(self) -> None:
        self.api = FakeAPIServer()
        self.recorder_client = self.api.client("kubelet")
        self.gate: threading.Event | None = None  # when set to an unset Event, create blocks on it
        self.api.prepend_reactor(self._hold)

    def _hold(self, action: Action) -> None:
        if action.verb == "create" and self.gate is not None:
            self.gate.wait()

    @property
    def calls(self) -> list[tuple[str, str, dict]]:
        return [(a.verb, a.path, a.body) for a in self.api.actions_of("kubelet", "create", "patch")]

    def verbs(self) -> list[str]:
        return [verb for verb, _, _ in self.calls]

    def fail_next(self, *errors: Exception) -> None:
        """Raised, in order, by the recorder's next calls."""
        self.api.fail_next(*errors, client="kubelet")

    def events(self) -> list[dict]:
        return self.api.client("test").list("/api/v1/events")["items"]

    def clear_events(self) -> None:
        test = self.api.client("test")
        for event in self.events():
            test.delete(f"/api/v1/namespaces/{event['metadata']['namespace']}/events/{event['metadata']['name']}")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall=T0)


@pytest.fixture
def client() -> Server:
    return Server()


def recorder(client: Server, clock: FakeClock, **kwargs) -> EventRecorder:
    return EventRecorder(client.recorder_client, component="kubelet", host="node-1", clock=clock, sleep_seconds=0.01,
                         **kwargs)


def test_event_is_a_core_v1_event_in_the_objects_namespace(client, clock):
    rec = recorder(client, clock)
    rec.event(POD, "Normal", "Pulled", "image pulled", field_path="spec.containers{app}")
    rec.shutdown(5)
    [(verb, path, body)] = client.calls
    assert (verb, path) == ("create", "/api/v1/namespaces/prod/events")
    nanos = int(T0.timestamp()) * 10**9 + 123456000
    assert body["metadata"] == {"name": f"web.{nanos:x}", "namespace": "prod"}
    assert body["involvedObject"] == {"kind": "Pod", "namespace": "prod", "name": "web", "uid": "u-1",
                                      "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "spec.containers{app}"}
    assert body["source"] == {"component": "kubelet", "host": "node-1"}
    assert (body["reportingComponent"], body["reportingInstance"]) == ("kubelet", "node-1")
    assert (body["type"], body["reason"], body["message"], body["count"]) == ("Normal", "Pulled", "image pulled", 1)
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2024-05-06T07:08:09Z"
    assert rec.sent == 1 and rec.dropped == 0


def test_cluster_scoped_objects_get_events_in_default(client, clock):
    rec = recorder(client, clock)
    rec.eventf(NODE, "Warning", "NodeNotReady", "node %s is %s", "n1", "down")
    rec.shutdown(5)
    [(_, path, body)] = client.calls
    assert path == "/api/v1/namespaces/default/events"
    assert body["message"] == "node n1 is down"
    assert "namespace" not in body["involvedObject"]


def test_names_stay_unique_within_one_clock_tick(client, clock):
    rec = recorder(client, clock)
    for message in ("a", "b", "c"):
        rec.event(POD, "Normal", "R", message)
    rec.shutdown(5)
    names = [body["metadata"]["name"] for _, _, body in client.calls]
    assert len(set(names)) == 3


@pytest.mark.parametrize("bad", ["Info", "normal", ""])
def test_unknown_event_type_is_refused(client, clock, bad):
    rec = recorder(client, clock)
    with pytest.raises(ValueError):
        rec.event(POD, bad, "R", "m")
    rec.shutdown(5)
    assert client.calls == []


def test_object_reference_accepts_a_reference_and_refuses_no_name():
    ref = {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u"}
    assert object_reference(ref) == ref
    with pytest.raises(ValueError):
        object_reference({"kind": "Pod", "metadata": {}})


def test_identical_event_patches_count_and_last_timestamp(client, clock):
    rec = recorder(client, clock)
    rec.event(POD, "Warning", "BackOff", "restarting")
    assert rec.flush(5)  # correlation reads the clock when the sender gets to an event, as upstream
    clock.step(30)
    rec.event(POD, "Warning", "BackOff", "restarting")
    assert rec.flush(5)
    clock.step(30)
    rec.event(POD, "Warning", "BackOff", "restarting")
    rec.shutdown(5)
    assert client.verbs() == ["create", "patch", "patch"]
    name = client.calls[0][2]["metadata"]["name"]
    assert client.calls[1][1] == f"/api/v1/namespaces/prod/events/{name}"
    assert client.calls[2][2] == {"count": 3, "lastTimestamp": "2024-05-06T07:09:09Z", "message": "restarting"}
    [stored] = client.events()
    assert (stored["count"], stored["firstTimestamp"], stored["lastTimestamp"]) == (
        3, "2024-05-06T07:08:09Z", "2024-05-06T07:09:09Z")


def test_deleted_event_is_created_again_after_the_404(client, clock):
    rec = recorder(client, clock)
    rec.event(POD, "Normal", "Started", "started")
    assert rec.flush(5)
    client.clear_events()  # e.g. the server's event TTL removed it
    clock.step(5)
    rec.event(POD, "Normal", "Started", "started")
    rec.shutdown(5)
    assert client.verbs() == ["create", "patch", "create"]
    recreated = client.calls[2][2]
    assert recreated["metadata"]["name"] == client.calls[0][2]["metadata"]["name"]
    assert recreated["count"] == 2


def test_similar_events_beyond_ten_are_combined(client, clock):
    rec = recorder(client, clock)
    for index in range(12):
        rec.event(POD, "Warning", "FailedMount", f"volume v{index} failed")
        assert rec.flush(5)
        clock.step(1)
    rec.shutdown(5)
    bodies = [body for verb, _, body in client.calls if verb == "create"]
    assert [body["message"] for body in bodies[:9]] == [f"volume v{index} failed" for index in range(9)]
    assert len(bodies) == 10
    combined = bodies[9]
    assert combined["message"] == COMBINED_PREFIX + "volume v9 failed"
    assert combined["count"] == 1 and combined["reason"] == "FailedMount"
    # the 11th and 12th count up the combined event, carrying the latest message
    patches = [(path, body) for verb, path, body in client.calls if verb == "patch"]
    assert [path.rsplit("/", 1)[1] for path, _ in patches] == [combined["metadata"]["name"]] * 2
    assert patches[-1][1]["count"] == 3 and patches[-1][1]["message"] == COMBINED_PREFIX + "volume v11 failed"


def test_similar_events_after_the_interval_start_afresh(client, clock):
    rec = recorder(client, clock)
    for index in range(9):
        rec.event(POD, "Warning", "FailedMount", f"m{index}")
    assert rec.flush(5)
    clock.step(601)
    rec.event(POD, "Warning", "FailedMount", "m9")
    rec.shutdown(5)
    assert [body["message"] for _, _, body in client.calls][-1] == "m9"


def test_spam_filter_allows_a_burst_of_25_then_one_per_five_minutes(client, clock):
    rec = recorder(client, clock)
    for _ in range(30):
        rec.event(POD, "Normal", "Sync", "synced")
    assert rec.flush(5)
    assert len(client.calls) == 25
    clock.step(299)
    rec.event(POD, "Normal", "Sync", "synced")
    assert rec.flush(5)
    clock.step(2)
    rec.event(POD, "Normal", "Sync", "synced")
    rec.event(POD, "Normal", "Sync", "synced")
    rec.shutdown(5)
    assert len(client.calls) == 26
    # filtered events were still counted, as upstream's eventLogger observes before the filter
    assert client.calls[-1][2]["count"] == 32


def test_spam_filter_is_per_object(client, clock):
    rec = recorder(client, clock)
    for _ in range(26):
        rec.event(POD, "Normal", "Sync", "synced")
    rec.event(NODE, "Normal", "Sync", "synced")
    rec.shutdown(5)
    assert len(client.calls) == 26 and client.calls[-1][1] == "/api/v1/namespaces/default/events"


def test_event_never_blocks_and_drops_when_the_queue_is_full(client, clock):
    client.gate = threading.Event()  # the server hangs
    rec = recorder(client, clock, max_queued=5)
    started = time.monotonic()
    for index in range(50):
        rec.event(POD, "Normal", "R", f"m{index}")
    assert time.monotonic() - started < 0.5
    # one event is in flight, five wait in the queue, the rest were dropped
    assert 44 <= rec.dropped <= 45
    client.gate.set()
    rec.shutdown(5)
    assert rec.sent + rec.dropped == 50


def test_transport_errors_are_retried(client, clock):
    client.fail_next(ConnectionError("refused"), OSError("reset"))
    rec = recorder(client, clock)
    rec.event(POD, "Normal", "R", "m")
    deadline = time.monotonic() + 5
    while rec.sent == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    rec.shutdown(5)
    assert client.verbs() == ["create"] * 3 and rec.sent == 1


def test_retries_give_up_after_max_tries(client, clock):
    client.fail_next(*[ConnectionError("refused")] * 3)
    rec = recorder(client, clock, max_tries=3)
    rec.event(POD, "Normal", "R", "m")
    deadline = time.monotonic() + 5
    while rec.dropped == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    rec.shutdown(5)
    assert len(client.calls) == 3 and (rec.sent, rec.dropped) == (0, 1)


def test_rejected_events_are_not_retried(client, clock):
    client.fail_next(Invalid(422, "Invalid", "bad event"))
    rec = recorder(client, clock)
    rec.event(POD, "Normal", "R", "m")
    rec.event(POD, "Normal", "R2", "m")
    rec.shutdown(5)
    assert client.verbs() == ["create", "create"] and rec.sent == 1


def test_shutdown_flushes_the_queue_and_refuses_later_events(client, clock):
    client.gate = threading.Event()
    rec = recorder(client, clock)
    for index in range(5):
        rec.event(POD, "Normal", "R", f"m{index}")
    threading.Timer(0.1, client.gate.set).start()
    rec.shutdown(5)
    assert rec.sent == 5
    rec.event(POD, "Normal", "R", "late")
    assert rec.dropped == 1 and len(client.calls) == 5


def test_shutdown_gives_up_at_its_timeout(client, clock):
    client.gate = threading.Event()
    rec = recorder(client, clock)
    rec.event(POD, "Normal", "R", "m")
    started = time.monotonic()
    rec.shutdown(0.2)
    assert time.monotonic() - started < 1
    client.gate.set()


@pytest.mark.parametrize(("steps", "accepted"), [
    pytest.param([0.0] * 3, [True, True, False], id="burst-2-spent"),
    pytest.param([0.0, 0.0, 0.5, 0.5], [True, True, False, True], id="refills-one-per-second"),
    pytest.param([0.0, 0.0, 10.0, 0.0, 0.0], [True, True, True, True, False], id="refill-capped-at-burst"),
])
def test_token_bucket(steps, accepted):
    bucket = TokenBucket(qps=1.0, burst=2, now=0.0)
    now, got = 0.0, []
    for step in steps:
        now += step
        got.append(bucket.try_accept(now))
    assert got == accepted


def test_correlator_results(clock):
    correlator = EventCorrelator(clock, spam_burst=2)
    event = {"metadata": {"name": "p.1", "namespace": "ns"}, "involvedObject": {"kind": "Pod", "name": "p"},
             "type": "Normal", "reason": "R", "message": "m", "source": {"component": "c"},
             "firstTimestamp": "t0", "lastTimestamp": "t0", "count": 1}
    first = correlator.correlate(event)
    assert first.patch is None and first.event["count"] == 1
    correlator.update_state(first.key, {**first.event, "metadata": {"name": "p.1", "resourceVersion": "9"}})
    second = correlator.correlate({**event, "lastTimestamp": "t1"})
    assert second.patch == {"count": 2, "lastTimestamp": "t1", "message": "m"}
    assert second.event["metadata"] == {"name": "p.1", "namespace": "ns", "resourceVersion": "9"}
    assert correlator.correlate(event).skip


def test_event_name_is_hex_nanoseconds():
    assert event_name("pod", datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=UTC)) == "pod.3b9add88"
