"""Leader election decisions on tables, and the elector against a fake Lease API and a fake clock
(upstream behaviour: client-go tools/leaderelection/leaderelection.go and resourcelock/leaselock.go)."""

from __future__ import annotations

import threading

import pytest

from control.client.errors import Conflict, NotFound
from control.client.leaderelection import (
    Action,
    LeaderElector,
    LeaderRecord,
    Observation,
    decide,
    lease_seconds,
    next_record,
    observe,
    released_record,
)
from tests.support.fake_clock import FakeClock
from tests.support.polling import wait_until

PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/sched"


class FakeLeases:
    """One Lease with resourceVersion compare-and-swap, as the API server does it."""

    def __init__(self) -> None:
        self.lease: dict | None = None
        self.rv = 0
        self.fail_updates = False
        self.writes: list[dict] = []

    def get(self, path: str, *, params=None) -> dict:
        assert path == PATH
        if self.lease is None:
            raise NotFound(404, "NotFound", "leases.coordination.k8s.io \"sched\" not found")
        return dict(self.lease)

    def create(self, path: str, body: dict, *, params=None) -> dict:
        assert path == PATH.rsplit("/", 1)[0]
        if self.lease is not None:
            raise Conflict(409, "AlreadyExists", "already exists")
        return self._store(body)

    def update(self, path: str, body: dict, *, params=None) -> dict:
        assert path == PATH
        if self.fail_updates:
            raise ConnectionError("server unreachable")
        if self.lease is None:
            raise NotFound(404, "NotFound", "gone")
        if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise Conflict(409, "Conflict", "the object has been modified")
        return self._store(body)

    def _store(self, body: dict) -> dict:
        self.rv += 1
        self.lease = {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.rv)}}
        self.writes.append(self.lease)
        return dict(self.lease)

    @property
    def spec(self) -> dict:
        assert self.lease is not None
        return self.lease["spec"]


def elector(leases: FakeLeases, clock: FakeClock, identity: str, **kwargs) -> LeaderElector:
    kwargs.setdefault("on_started_leading", lambda lost: None)
    kwargs.setdefault("on_stopped_leading", lambda: None)
    return LeaderElector(leases, namespace="kube-system", name="sched", identity=identity, clock=clock, **kwargs)


# --- pure decisions ------------------------------------------------------------------------------------

HELD_BY_B = LeaderRecord("b", 15, "t0", "t1", 3)


@pytest.mark.parametrize(("observation", "now", "action"), [
    pytest.param(None, 0.0, Action.CREATE, id="no-lease"),
    pytest.param(Observation(LeaderRecord("a", 15, "t0", "t1", 3), 100.0), 200.0, Action.RENEW, id="mine-even-expired"),
    pytest.param(Observation(HELD_BY_B, 100.0), 114.9, Action.WAIT, id="other-valid"),
    pytest.param(Observation(HELD_BY_B, 100.0), 115.0, Action.ACQUIRE, id="other-expired"),
    pytest.param(Observation(LeaderRecord("", 1, "t0", "t1", 3), 100.0), 100.0, Action.ACQUIRE, id="released"),
])
def test_decide(observation, now, action):
    assert decide(observation, identity="a", now=now) is action


@pytest.mark.parametrize(("action", "current", "expected"), [
    pytest.param(Action.CREATE, None, LeaderRecord("a", 15, "now", "now", 0), id="create"),
    pytest.param(Action.RENEW, LeaderRecord("a", 15, "t0", "t1", 3), LeaderRecord("a", 15, "t0", "now", 3),
                 id="renew-keeps-acquire-time-and-transitions"),
    pytest.param(Action.ACQUIRE, HELD_BY_B, LeaderRecord("a", 15, "now", "now", 4), id="take-over-counts"),
])
def test_next_record(action, current, expected):
    assert next_record(action, current, identity="a", lease_seconds=15, now="now") == expected


def test_next_record_refuses_to_write_while_waiting():
    with pytest.raises(ValueError):
        next_record(Action.WAIT, HELD_BY_B, identity="a", lease_seconds=15, now="now")


def test_released_record_empties_the_holder_and_keeps_transitions():
    assert released_record(HELD_BY_B, now="now") == LeaderRecord("", 1, "now", "now", 3)


def test_observe_keeps_the_first_sighting_of_an_unchanged_record():
    first = observe(None, HELD_BY_B, 10.0)
    assert observe(first, HELD_BY_B, 20.0) is first
    renewed = LeaderRecord("b", 15, "t0", "t2", 3)
    assert observe(first, renewed, 20.0) == Observation(renewed, 20.0)


@pytest.mark.parametrize(("duration", "seconds"), [(15.0, 15), (2.0, 2), (1.5, 2), (0.2, 1)])
def test_lease_seconds_round_up(duration, seconds):
    assert lease_seconds(duration) == seconds


def test_record_round_trips_through_a_lease_spec():
    lease = {"spec": HELD_BY_B.to_spec()}
    assert lease["spec"] == {"holderIdentity": "b", "leaseDurationSeconds": 15, "leaseTransitions": 3,
                             "acquireTime": "t0", "renewTime": "t1"}
    assert LeaderRecord.from_lease(lease) == HELD_BY_B
    assert LeaderRecord.from_lease({}) == LeaderRecord()


@pytest.mark.parametrize("durations", [
    {"lease_duration": 10, "renew_deadline": 10, "retry_period": 2},
    {"lease_duration": 15, "renew_deadline": 2.4, "retry_period": 2},
    {"lease_duration": 15, "renew_deadline": 10, "retry_period": 0},
])
def test_bad_durations_are_refused(durations):
    with pytest.raises(ValueError):
        elector(FakeLeases(), FakeClock(), "a", **durations)


# --- one attempt at a time -----------------------------------------------------------------------------

def test_first_candidate_creates_the_lease():
    leases, clock = FakeLeases(), FakeClock()
    a = elector(leases, clock, "a")
    assert a.try_acquire_or_renew()
    assert leases.lease["metadata"] == {"name": "sched", "namespace": "kube-system", "resourceVersion": "1"}
    assert leases.spec["holderIdentity"] == "a" and leases.spec["leaseDurationSeconds"] == 15
    assert leases.spec["leaseTransitions"] == 0
    assert leases.spec["acquireTime"] == leases.spec["renewTime"] == "2024-01-01T00:16:40.000000Z"


def test_renew_moves_renew_time_only():
    leases, clock = FakeLeases(), FakeClock()
    a = elector(leases, clock, "a")
    assert a.try_acquire_or_renew()
    clock.step(2)
    assert a.try_acquire_or_renew()
    assert leases.spec["acquireTime"] == "2024-01-01T00:16:40.000000Z"
    assert leases.spec["renewTime"] == "2024-01-01T00:16:42.000000Z"
    assert leases.spec["leaseTransitions"] == 0 and leases.rv == 2


def test_others_wait_while_the_holder_renews_and_take_over_once_it_stops():
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    assert a.try_acquire_or_renew()
    for _ in range(20):  # 40 s of renewals: b keeps seeing a change, so never an expired lease
        assert not b.try_acquire_or_renew()
        clock.step(2)
        assert a.try_acquire_or_renew()
    assert b.leader() == "a"
    assert not b.try_acquire_or_renew()  # first sighting of the last renewal
    clock.step(14.9)
    assert not b.try_acquire_or_renew()
    clock.step(0.1)
    assert b.try_acquire_or_renew()  # 15 s without a change: expired
    assert leases.spec["holderIdentity"] == "b" and leases.spec["leaseTransitions"] == 1
    # a's optimistic renewal now conflicts; the slow path sees b's fresh lease and gives up
    assert not a.try_acquire_or_renew()
    assert a.leader() == "b" and leases.spec["holderIdentity"] == "b"


def test_a_conflicting_write_loses():
    leases, clock = FakeLeases(), FakeClock()
    a, b, c = (elector(leases, clock, name) for name in "abc")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew() and not c.try_acquire_or_renew()
    clock.step(15)
    stale_get = leases.get
    leases.get = lambda path, **kw: (stale_get(path), b.try_acquire_or_renew())[0]  # b writes between c's GET
    assert not c.try_acquire_or_renew()  # and PUT: the PUT carries a stale resourceVersion
    leases.get = stale_get
    assert leases.spec["holderIdentity"] == "b" and leases.spec["leaseTransitions"] == 1


def test_create_race_is_lost_on_already_exists():
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")

    def not_found(path: str, **kwargs) -> dict:  # both read before either created
        raise NotFound(404, "NotFound", "not found")

    leases.get = not_found
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # its create meets AlreadyExists
    assert leases.spec["holderIdentity"] == "a" and leases.rv == 1


def test_release_lets_the_next_candidate_in_at_once():
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.release()
    assert leases.spec["holderIdentity"] == "" and leases.spec["leaseDurationSeconds"] == 1
    assert b.try_acquire_or_renew()
    assert leases.spec["holderIdentity"] == "b" and leases.spec["leaseTransitions"] == 1


def test_release_by_a_non_holder_writes_nothing():
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert b.release() and leases.rv == 1


# --- run -----------------------------------------------------------------------------------------------

def run_in_thread(candidate: LeaderElector, stop: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=candidate.run, args=(stop,), daemon=True)
    thread.start()
    return thread


def test_run_leads_until_stopped_then_releases():
    leases, clock = FakeLeases(), FakeClock()
    calls: list[str] = []
    lost_seen: list[threading.Event] = []

    def started(lost: threading.Event) -> None:
        lost_seen.append(lost)
        calls.append("started")

    a = elector(leases, clock, "a", on_started_leading=started, on_stopped_leading=lambda: calls.append("stopped"))
    stop = threading.Event()
    thread = run_in_thread(a, stop)
    assert wait_until(lambda: calls == ["started"] and a.is_leader(), interval=0.005)
    assert wait_until(lambda: leases.rv >= 3, interval=0.005)  # it keeps renewing
    stop.set()
    thread.join(5)
    assert not thread.is_alive() and calls == ["started", "stopped"]
    assert lost_seen[0].is_set() and not a.is_leader()
    assert leases.spec["holderIdentity"] == "" and leases.spec["leaseDurationSeconds"] == 1


def test_run_without_release_leaves_the_lease_to_expire():
    leases, clock = FakeLeases(), FakeClock()
    a = elector(leases, clock, "a", release_on_cancel=False)
    stop = threading.Event()
    thread = run_in_thread(a, stop)
    assert wait_until(a.is_leader, interval=0.005)
    stop.set()
    thread.join(5)
    assert leases.spec["holderIdentity"] == "a"


def test_run_gives_up_leading_when_renewals_fail_past_the_deadline():
    leases, clock = FakeLeases(), FakeClock()
    stopped = threading.Event()
    a = elector(leases, clock, "a", on_stopped_leading=stopped.set)
    stop = threading.Event()
    thread = run_in_thread(a, stop)
    assert wait_until(a.is_leader, interval=0.005)
    leases.fail_updates = True
    started_failing = clock.monotonic()
    assert wait_until(stopped.is_set, interval=0.005)
    thread.join(5)
    assert not thread.is_alive() and not stop.is_set() and not a.is_leader()
    assert clock.monotonic() - started_failing >= 10  # it kept trying for the whole renew deadline


def test_a_waiting_candidate_takes_over_after_expiry_and_counts_the_transition():
    leases, clock = FakeLeases(), FakeClock()
    a = elector(leases, clock, "a")
    assert a.try_acquire_or_renew()  # a then dies without releasing
    b = elector(leases, clock, "b")
    stop = threading.Event()
    start = clock.monotonic()
    thread = run_in_thread(b, stop)
    assert wait_until(b.is_leader, interval=0.005)
    assert clock.monotonic() - start >= 15
    assert leases.spec["holderIdentity"] == "b" and leases.spec["leaseTransitions"] == 1
    stop.set()
    thread.join(5)


def test_run_stopped_before_acquiring_never_starts_leading():
    leases, clock = FakeLeases(), FakeClock()
    holder = elector(leases, clock, "a")
    assert holder.try_acquire_or_renew()
    calls: list[str] = []
    b = elector(leases, clock, "b", on_started_leading=lambda lost: calls.append("started"),
                on_stopped_leading=lambda: calls.append("stopped"))
    stop = threading.Event()
    stop.set()
    b.run(stop)
    assert calls == ["stopped"]  # upstream calls OnStoppedLeading whenever Run returns
    assert leases.spec["holderIdentity"] == "a"
