"""ElectedPart against the shared fake API server: of two candidates exactly one runs its part; when the
leader stops, the other takes over; when the leader cannot renew, its part stops and it campaigns again;
the two parts never run at the same time."""

from __future__ import annotations

import threading
import time

import pytest

from slimkube.leadership import ElectedPart, LeaderElection
from tests.support.fake_apiserver import FakeAPIServer, api_error
from tests.support.polling import wait_until

FAST = LeaderElection(lease_duration=1.0, renew_deadline=0.5, retry_period=0.1)  # a 1 s Lease


class Timeline:
    """Which candidates' parts run now, and whether two ever ran at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[str] = set()
        self.starts: list[str] = []
        self.overlapped = False

    def part(self, name: str) -> _Part:
        with self.lock:
            self.overlapped |= bool(self.running)
            self.running.add(name)
            self.starts.append(name)
        return _Part(self, name)


class _Part:
    def __init__(self, timeline: Timeline, name: str) -> None:
        self.timeline, self.name = timeline, name

    def stop(self) -> None:
        with self.timeline.lock:
            self.timeline.running.discard(self.name)


@pytest.fixture
def candidates():
    server = FakeAPIServer()
    timeline = Timeline()
    parts = {name: ElectedPart(server.client(name), lease="kube-controller-manager", identity=f"host_{name}",
                               election=FAST, start=lambda name=name: timeline.part(name))
             for name in ("a", "b")}
    yield server, timeline, parts
    for part in parts.values():
        part.stop(timeout=5)


def test_one_leader_runs_and_the_other_takes_over_when_it_stops(candidates):
    server, timeline, parts = candidates
    for part in parts.values():
        part.start()
    assert wait_until(lambda: len(timeline.starts) == 1, timeout=5)
    leader = timeline.starts[0]
    other = "b" if leader == "a" else "a"
    time.sleep(1.5)  # longer than the lease: the leader keeps renewing, the other never starts
    assert timeline.starts == [leader] and timeline.running == {leader}

    parts[leader].stop(timeout=5)  # releases the Lease on the way out
    assert timeline.running <= {other}
    assert wait_until(lambda: timeline.running == {other}, timeout=3)
    assert timeline.starts == [leader, other] and not timeline.overlapped


def test_a_leader_that_cannot_renew_stops_its_part_and_campaigns_again(candidates):
    server, timeline, parts = candidates
    parts["a"].start()
    assert wait_until(lambda: timeline.running == {"a"}, timeout=5)
    # Every renewal of a's fails for longer than the renew deadline: a's term ends, its part stops.
    server.fail_next(*[api_error(504, "Timeout", "etcd is slow")] * 40, client="a")
    assert wait_until(lambda: not timeline.running, timeout=5)
    # The failures run out and a, still the Lease's holder, renews and leads again.
    assert wait_until(lambda: timeline.running == {"a"}, timeout=10)
    assert timeline.starts == ["a", "a"] and not timeline.overlapped


def test_health_follows_the_campaign_and_the_running_part(candidates):
    server, timeline, parts = candidates
    part = parts["a"]
    assert part.health() == "not campaigning for the Lease kube-system/kube-controller-manager"
    part.start()
    assert wait_until(lambda: timeline.running == {"a"}, timeout=5)
    assert part.health() is None
    part._current.health = lambda: "controllers stopped: x"  # the running part's own word counts
    assert part.health() == "controllers stopped: x"
