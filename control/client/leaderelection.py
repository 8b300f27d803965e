"""Leader election on a coordination.k8s.io/v1 Lease.

Upstream: client-go tools/leaderelection/leaderelection.go (`LeaderElector.Run`, `acquire`, `renew`,
`release`, `tryAcquireOrRenew`, `isLeaseValid`) and resourcelock/leaselock.go (the Lease spec fields
holderIdentity, leaseDurationSeconds, acquireTime, renewTime, leaseTransitions).

How it decides (pure functions below, tested on tables):
- Expiry is judged on the local clock only, as upstream: a candidate notes *when it first saw* the
  current record (`Observation.time`, upstream's observedTime) and holds it valid until that moment plus
  the record's leaseDurationSeconds. The renewTime written in the Lease is never compared with local time,
  so clock skew between machines does not matter (skew *rate* does; keep lease_duration > renew_deadline).
- No Lease: create one (transitions 0). Held by me: renew (acquireTime and transitions kept, even if my
  own lease looks expired). Held by another and still valid: wait. Empty holder (released) or expired:
  take over with transitions + 1.
- Every write is a PUT of the Lease read last, so its resourceVersion makes it a compare-and-swap: a 409
  means another candidate wrote first and this attempt failed. A create that meets AlreadyExists too.

How it runs (`run(stop)`): try every retry_period (jittered by up to 1.2x, upstream's JitterFactor) until
acquired; then call `on_started_leading(lost)` on its own thread and renew: each round retries every
retry_period until it succeeds or renew_deadline has passed since the round began; a round that fails
ends the leadership. A leader renews optimistically from the Lease it last wrote (no GET) and falls
back to GET + decide when that write fails. When leading ends (lost, or `stop` set) the `lost` event
is set, the Lease is released if `release_on_cancel` (holder emptied, leaseDurationSeconds 1, so others
take over at their next try), and `on_stopped_leading()` is called. As upstream, `on_stopped_leading`
is called whenever `run` returns, even if this candidate never led.

Departures: leaseDurationSeconds is the configured duration rounded *up* to whole seconds (upstream
truncates), so a fractional duration never lets others take over before the holder's renew deadline;
`is_leader()` means "leading right now" (between acquiring and losing), not "the last record I saw
names me".
"""

from __future__ import annotations

import logging
import math
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from control.apimachinery.meta import format_timestamp
from control.client.errors import NotFound
from control.client.paths import resource_path
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2
LEASE_DURATION = 15.0
RENEW_DEADLINE = 10.0
RETRY_PERIOD = 2.0


class LeaseClient(Protocol):
    """The part of RESTClient the elector uses."""

    def get(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def create(self, path: str, body: dict[str, Any], *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def update(self, path: str, body: dict[str, Any], *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...


# --- decisions -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LeaderRecord:
    """resourcelock.LeaderElectionRecord as it sits in a Lease spec."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0

    @classmethod
    def from_lease(cls, lease: Mapping[str, Any]) -> LeaderRecord:
        spec = lease.get("spec") or {}
        return cls(spec.get("holderIdentity") or "", int(spec.get("leaseDurationSeconds") or 0),
                   spec.get("acquireTime"), spec.get("renewTime"), int(spec.get("leaseTransitions") or 0))

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"holderIdentity": self.holder_identity,
                                "leaseDurationSeconds": self.lease_duration_seconds,
                                "leaseTransitions": self.lease_transitions}
        if self.acquire_time:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time:
            spec["renewTime"] = self.renew_time
        return spec


@dataclass(frozen=True)
class Observation:
    """A record and the local (monotonic) time it was first seen in this exact form."""

    record: LeaderRecord
    time: float


class Action(Enum):
    CREATE = "create"  # no Lease yet
    RENEW = "renew"  # I hold it
    ACQUIRE = "acquire"  # released or expired: take it over
    WAIT = "wait"  # someone else holds a valid lease


def observe(previous: Observation | None, record: LeaderRecord, now: float) -> Observation:
    """An unchanged record keeps the time it was first seen; any change restarts the clock."""
    if previous is not None and previous.record == record:
        return previous
    return Observation(record, now)


def lease_valid(observation: Observation, now: float) -> bool:
    return observation.time + observation.record.lease_duration_seconds > now


def decide(observation: Observation | None, *, identity: str, now: float) -> Action:
    """tryAcquireOrRenew's choice, given what was just read (None: the Lease does not exist)."""
    if observation is None:
        return Action.CREATE
    holder = observation.record.holder_identity
    if holder == identity:
        return Action.RENEW
    if holder and lease_valid(observation, now):
        return Action.WAIT
    return Action.ACQUIRE


def next_record(action: Action, current: LeaderRecord | None, *, identity: str, lease_seconds: int,
                now: str) -> LeaderRecord:
    """The record to write for CREATE, RENEW or ACQUIRE (`now` is a MicroTime string)."""
    if action is Action.WAIT:
        raise ValueError("nothing to write while another candidate holds a valid lease")
    transitions = current.lease_transitions if current is not None else 0
    if action is Action.RENEW and current is not None:
        return LeaderRecord(identity, lease_seconds, current.acquire_time or now, now, transitions)
    if action is Action.ACQUIRE:
        transitions += 1
    return LeaderRecord(identity, lease_seconds, now, now, transitions)


def released_record(current: LeaderRecord, *, now: str) -> LeaderRecord:
    """What `release` writes: nobody holds it, and it lasts one second (others may take it at once)."""
    return LeaderRecord("", 1, now, now, current.lease_transitions)


def lease_seconds(duration: float) -> int:
    return max(1, math.ceil(duration))


# --- the elector ---------------------------------------------------------------------------------------

def check_timings(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """ValueError unless the timings can work (upstream NewLeaderElector's checks): all positive, a leader's
    renew deadline inside its lease, and room for a jittered retry inside the deadline."""
    if min(lease_duration, renew_deadline, retry_period) <= 0:
        raise ValueError("lease_duration, renew_deadline and retry_period must be greater than zero")
    if lease_duration <= renew_deadline:
        raise ValueError("lease_duration must be greater than renew_deadline")
    if renew_deadline <= JITTER_FACTOR * retry_period:
        raise ValueError("renew_deadline must be greater than retry_period * 1.2")


class LeaderElector:
    """One candidate for the Lease `namespace/name`."""

    def __init__(self, client: LeaseClient, *, namespace: str, name: str, identity: str,
                 lease_duration: float = LEASE_DURATION, renew_deadline: float = RENEW_DEADLINE,
                 retry_period: float = RETRY_PERIOD, on_started_leading: Callable[[threading.Event], None],
                 on_stopped_leading: Callable[[], None], release_on_cancel: bool = True,
                 clock: Clock | None = None) -> None:
        if not identity:
            raise ValueError("identity must not be empty")
        check_timings(lease_duration, renew_deadline, retry_period)
        self._client = client
        self._namespace = namespace
        self._path = resource_path("coordination.k8s.io/v1", "leases", namespace=namespace, name=name)
        self._name = name
        self.identity = identity
        self._lease_duration = lease_duration
        self._renew_deadline = renew_deadline
        self._retry_period = retry_period
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._release_on_cancel = release_on_cancel
        self._clock: Clock = clock or RealClock()
        self._observation: Observation | None = None
        self._lease: dict[str, Any] | None = None  # the Lease as last read or written (its resourceVersion)
        self._leading = threading.Event()

    def is_leader(self) -> bool:
        return self._leading.is_set()

    def leader(self) -> str:
        """The holder last observed ("" if none yet): informational, as upstream's GetLeader."""
        return self._observation.record.holder_identity if self._observation else ""

    def run(self, stop: threading.Event) -> None:
        """Campaign until `stop` is set or leadership, once won, is lost; then return."""
        lost = threading.Event()
        try:
            if not self._acquire(stop):
                return
            self._leading.set()
            threading.Thread(target=self._on_started, args=(lost,), name=f"leader-{self._name}",
                             daemon=True).start()
            self._renew(stop)
        finally:
            was_leading = self._leading.is_set()
            self._leading.clear()
            lost.set()
            if was_leading and self._release_on_cancel:
                self.release()
            self._on_stopped()

    def release(self) -> bool:
        """Give the Lease up if this candidate holds it (upstream's release)."""
        if self._observation is None or self._lease is None or (
                self._observation.record.holder_identity != self.identity):
            return True
        record = released_record(self._observation.record, now=self._stamp())
        try:
            self._lease = self._client.update(self._path, {**self._lease, "spec": record.to_spec()})
        except Exception as error:  # noqa: BLE001 - release is best effort: the lease expires anyway
            log.error("failed to release lease %s/%s: %s", self._namespace, self._name, error)
            return False
        self._observation = Observation(record, self._clock.monotonic())
        return True

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True if this candidate holds the Lease afterwards."""
        now = self._clock.monotonic()
        seconds = lease_seconds(self._lease_duration)
        observation = self._observation
        if (observation is not None and self._lease is not None and observation.record.holder_identity == self.identity
                and lease_valid(observation, now)):
            record = next_record(Action.RENEW, observation.record, identity=self.identity, lease_seconds=seconds,
                                 now=self._stamp())
            if self._write(record, now):  # fast path: the Lease I wrote last is still current
                return True
        try:
            lease = self._client.get(self._path)
        except NotFound:
            record = next_record(Action.CREATE, None, identity=self.identity, lease_seconds=seconds,
                                 now=self._stamp())
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self._name, "namespace": self._namespace}, "spec": record.to_spec()}
            try:
                self._lease = self._client.create(resource_path("coordination.k8s.io/v1", "leases",
                                                                namespace=self._namespace), body)
            except Exception as error:  # noqa: BLE001 - AlreadyExists or transport: try again later
                log.info("could not create lease %s/%s: %s", self._namespace, self._name, error)
                return False
            self._observation = Observation(record, now)
            return True
        except Exception as error:  # noqa: BLE001 - a failed read is a failed attempt
            log.warning("error retrieving lease %s/%s: %s", self._namespace, self._name, error)
            return False
        self._lease = lease
        self._observation = observe(self._observation, LeaderRecord.from_lease(lease), now)
        action = decide(self._observation, identity=self.identity, now=now)
        if action is Action.WAIT:
            return False
        record = next_record(action, self._observation.record, identity=self.identity, lease_seconds=seconds,
                             now=self._stamp())
        return self._write(record, now)

    def _write(self, record: LeaderRecord, now: float) -> bool:
        assert self._lease is not None
        try:  # PUT with the resourceVersion last read: a 409 means someone else wrote first
            self._lease = self._client.update(self._path, {**self._lease, "spec": record.to_spec()})
        except Exception as error:  # noqa: BLE001 - Conflict or transport: this attempt failed
            log.info("failed to update lease %s/%s: %s", self._namespace, self._name, error)
            return False
        self._observation = Observation(record, now)
        return True

    def _stamp(self) -> str:
        return format_timestamp(self._clock.now(), micro=True)

    def _acquire(self, stop: threading.Event) -> bool:
        while not stop.is_set():
            if self.try_acquire_or_renew():
                log.info("%s acquired lease %s/%s", self.identity, self._namespace, self._name)
                return True
            delay = self._retry_period * (1 + random.random() * JITTER_FACTOR)
            if self._clock.sleep(stop, delay):
                break
        return False

    def _renew(self, stop: threading.Event) -> None:
        """Renew rounds until one fails to succeed within renew_deadline, or `stop` is set."""
        while not stop.is_set():
            deadline = self._clock.monotonic() + self._renew_deadline
            while not self.try_acquire_or_renew():
                remaining = deadline - self._clock.monotonic()
                if remaining <= 0:
                    log.warning("%s lost lease %s/%s", self.identity, self._namespace, self._name)
                    return
                if self._clock.sleep(stop, min(self._retry_period, remaining)):
                    return
            if self._clock.sleep(stop, self._retry_period):
                return
