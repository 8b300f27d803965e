"""The pod lifecycle event generator: relist Docker, diff against the last relist, tell each pod's worker.

Upstream: pkg/kubelet/pleg/generic.go (GenericPLEG) and pkg/kubelet/container/cache.go. Facts followed:
- states are folded into running / exited / unknown / non-existent; Docker's "created" counts as unknown
  (convertState), and an id absent from a list is non-existent;
- generateEvents: no event when the state is unchanged; → running: ContainerStarted; → exited:
  ContainerDied; → unknown: ContainerChanged; → non-existent: ContainerRemoved, preceded by
  ContainerDied unless the container had already been seen exited;
- sandboxes are diffed like containers (getContainersFromPods);
- a pod whose inspection fails keeps its old record, so the same change is found and retried at the next
  relist, and its events wait until then; meanwhile the cache holds the pod, so a worker waiting for a
  status newer than its last action keeps waiting (upstream caches the error and the sync retries);
- ContainerChanged is computed but not sent ("not reliable", upstream filters it out too);
- sending never blocks the relist: events go to a bounded queue; when it is full they are dropped and
  counted (upstream's PLEGDiscardEvents), the periodic sync being the safety net;
- Healthy() is false before the first successful relist and when the last one is older than the
  threshold (3 minutes upstream);
- the cache keeps a status and its time per pod plus a global time set after every relist;
  GetNewerThan blocks until either is newer than the caller's time.

Where slimkube differs, for cost: upstream re-reads a whole pod's status when any of its containers
changes; here the list entry's (id, State) pair is the change detector and only containers whose pair is
new are inspected, the statuses of the others being kept from earlier relists (the
low-level list is ~10x cheaper than the high-level one, one inspect ~1 ms). Each pod's PodStatus is
rebuilt every relist from those kept statuses (no Docker call), so a pod IP assigned after its sandbox
started still reaches the cache.

Three more departures, for pod start-up latency (bench/pod_startup.py): dockerd answers an
inspect of a container only once that container's start has finished, so with many pods starting one
serial relist could take seconds and hold back every pod's status. So the changed containers are inspected
concurrently (up to `inspect_concurrency` at a time; the events are the same as a serial pass); a relist
waits at most `inspect_wait` for them, commits the pods that are done and leaves the others in flight (the
pod is held in the cache, as after a failed inspect, and the next relist — requested as soon as the
inspect answers — takes the answer); and `request_relist()` lets a pod worker that just started
containers ask for a relist before the period ends (upstream has no such call; its relist period stays
the longest interval between relists here, and relists still run one at a time).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from nodeagent.runtime.docker_status import AnyStatus, assemble, list_state
from nodeagent.runtime.labels import Identity, parse_entry
from nodeagent.runtime.types import ContainerState, PodStatus, SandboxStatus

log = logging.getLogger(__name__)

DEFAULT_RELIST_PERIOD = 1.0
DEFAULT_RELIST_THRESHOLD = 180.0
DEFAULT_EVENT_CAPACITY = 1000  # upstream's plegChannelCapacity
# Inspects in flight at once. Generous: an inspect of a container being started waits in dockerd until the
# start ends (seconds when 30 pods start at once), and with 8 such waits the pool had no thread left for the
# containers already started (bench/pod_startup.py: p99 5.3 s with 8, 4.9 s with 32).
DEFAULT_INSPECT_CONCURRENCY = 32
DEFAULT_INSPECT_WAIT = 0.1  # seconds a relist waits for its inspects before committing the pods that are done


class PlegState(str, Enum):
    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"
    NON_EXISTENT = "non-existent"


class EventType(str, Enum):
    CONTAINER_STARTED = "ContainerStarted"
    CONTAINER_DIED = "ContainerDied"
    CONTAINER_REMOVED = "ContainerRemoved"
    CONTAINER_CHANGED = "ContainerChanged"


@dataclass(frozen=True)
class PodLifecycleEvent:
    pod_uid: str
    type: EventType
    container_id: str


def convert_state(state: ContainerState | None) -> PlegState:
    if state is None:
        return PlegState.NON_EXISTENT
    if state is ContainerState.RUNNING:
        return PlegState.RUNNING
    if state is ContainerState.EXITED:
        return PlegState.EXITED
    return PlegState.UNKNOWN  # created, unknown


def generate_events(pod_uid: str, container_id: str, old: PlegState, new: PlegState) -> tuple[PodLifecycleEvent, ...]:
    """The events for one container going from `old` to `new` between two relists."""
    if old is new:
        return ()

    def event(kind: EventType) -> PodLifecycleEvent:
        return PodLifecycleEvent(pod_uid, kind, container_id)

    if new is PlegState.RUNNING:
        return (event(EventType.CONTAINER_STARTED),)
    if new is PlegState.EXITED:
        return (event(EventType.CONTAINER_DIED),)
    if new is PlegState.UNKNOWN:
        return (event(EventType.CONTAINER_CHANGED),)
    if old is PlegState.EXITED:  # its death was reported already
        return (event(EventType.CONTAINER_REMOVED),)
    return (event(EventType.CONTAINER_DIED), event(EventType.CONTAINER_REMOVED))


def compute_pod_events(
    pod_uid: str, old: Mapping[str, PlegState], new: Mapping[str, PlegState]
) -> tuple[PodLifecycleEvent, ...]:
    """Diff two relists of one pod (container id → state, sandboxes included), old ids first."""
    ids = list(old) + [cid for cid in new if cid not in old]
    events: list[PodLifecycleEvent] = []
    for cid in ids:
        events += generate_events(pod_uid, cid, old.get(cid, PlegState.NON_EXISTENT),
                                  new.get(cid, PlegState.NON_EXISTENT))
    return tuple(events)


class RelistSource(Protocol):
    """What the PLEG reads: `nodeagent.runtime.docker.DockerRuntime` provides it."""

    pod_ip: Callable[[SandboxStatus], str] | None

    def list_containers(self) -> list[dict[str, Any]]: ...

    def inspect_status(self, container_id: str, identity: Identity) -> AnyStatus: ...


class PodCache:
    """uid → (PodStatus, time it was written) and a global time: upstream's kubecontainer cache. Times
    come from the PLEG's clock; a pod missing from the cache reads as an empty PodStatus (no containers)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._pods: dict[str, tuple[PodStatus, float]] = {}
        self._time = float("-inf")  # no relist yet
        self._held: set[str] = set()  # pods whose last relist could not read them: the global time is not theirs
        self._changed = threading.Condition()

    def get(self, uid: str) -> PodStatus:
        with self._changed:
            found = self._pods.get(uid)
        return found[0] if found else PodStatus(uid=uid, name="", namespace="")

    def set(self, uid: str, status: PodStatus, timestamp: float) -> None:
        with self._changed:
            self._pods[uid] = (status, timestamp)
            self._held.discard(uid)
            self._changed.notify_all()

    def delete(self, uid: str) -> None:
        with self._changed:
            self._pods.pop(uid, None)
            self._held.discard(uid)
            self._changed.notify_all()

    def hold(self, uid: str) -> None:
        """The last relist could not read this pod (an inspect failed or is still pending): until the next
        `set`, only the pod's own time counts for it, so a worker never acts on what the cache had before
        (upstream stores the inspect error in the cache, and the worker's sync fails and retries)."""
        with self._changed:
            self._held.add(uid)

    def is_held(self, uid: str) -> bool:
        with self._changed:
            return uid in self._held

    def update_time(self, timestamp: float) -> None:
        with self._changed:
            self._time = max(self._time, timestamp)
            self._changed.notify_all()

    def uids(self) -> list[str]:
        with self._changed:
            return list(self._pods)

    def _newer(self, uid: str, min_time: float) -> bool:
        found = self._pods.get(uid)
        return (self._time > min_time and uid not in self._held) or (found is not None and found[1] > min_time)

    def get_newer_than(self, uid: str, min_time: float, *, timeout: float | None = None) -> PodStatus | None:
        """The pod's status once the cache holds data newer than `min_time` (a worker passes the time it
        last acted, so it never decides on a status older than its own action); None on timeout."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._newer(uid, min_time), timeout=timeout):
                return None
            found = self._pods.get(uid)
        return found[0] if found else PodStatus(uid=uid, name="", namespace="")


@dataclass
class _Record:
    """What the last relist knew of one container: its list key (id, State), identity and status."""

    key: tuple[str, str]
    identity: Identity
    status: AnyStatus


@dataclass
class RelistResult:
    """One relist's outcome, for tests and metrics."""

    events: list[PodLifecycleEvent] = field(default_factory=list)
    inspected: int = 0
    failed_pods: set[str] = field(default_factory=set)


class GenericPLEG:
    """Relists every `period` seconds on its own thread, or sooner after `request_relist()`;
    `on_events(uid, events)` is called on a separate dispatcher thread once per pod and relist with that
    pod's events (it should only wake the worker)."""

    def __init__(
        self,
        source: RelistSource,
        *,
        on_events: Callable[[str, tuple[PodLifecycleEvent, ...]], None] | None = None,
        cache: PodCache | None = None,
        clock: Callable[[], float] = time.monotonic,
        period: float = DEFAULT_RELIST_PERIOD,
        threshold: float = DEFAULT_RELIST_THRESHOLD,
        capacity: int = DEFAULT_EVENT_CAPACITY,
        inspect_concurrency: int = DEFAULT_INSPECT_CONCURRENCY,
        inspect_wait: float = DEFAULT_INSPECT_WAIT,
        on_relist: Callable[[float], None] | None = None,
    ) -> None:
        self.source = source
        self.on_relist = on_relist  # gets each relist's duration in seconds (kubelet_pleg_relist_duration_seconds)
        self.on_events = on_events
        self.clock = clock
        self.cache = cache or PodCache(clock)
        self.period = period
        self.threshold = threshold
        self.inspect_wait = inspect_wait
        self._inspector = ThreadPoolExecutor(max(1, inspect_concurrency), thread_name_prefix="pleg-inspect")
        self._inflight: dict[tuple[str, str], Future[AnyStatus]] = {}  # list key → inspect, kept across relists
        self.discarded = 0
        self._records: dict[str, _Record] = {}  # container id → record, as of the last relist
        self._pods: dict[str, dict[str, PlegState]] = {}  # uid → container id → state, last relist
        self._relist_time: float | None = None
        self._lock = threading.Lock()  # one relist at a time
        self._queue: queue.Queue[tuple[str, tuple[PodLifecycleEvent, ...]] | None] = queue.Queue(capacity)
        self._stop = threading.Event()
        self._wake = threading.Event()  # set by request_relist (and stop): the relist loop stops waiting
        self._threads: list[threading.Thread] = []

    # ---- health ----

    def healthy(self) -> tuple[bool, str]:
        if self._relist_time is None:
            return False, "pleg has yet to be successful"
        elapsed = self.clock() - self._relist_time
        if elapsed > self.threshold:
            return False, f"pleg was last seen active {elapsed:.0f}s ago; threshold is {self.threshold:.0f}s"
        return True, ""

    # ---- relist ----

    def relist(self) -> RelistResult:
        with self._lock:
            started = time.monotonic()
            result = self._relist()
            if self.on_relist is not None:
                self.on_relist(time.monotonic() - started)
            return result

    def _relist(self) -> RelistResult:
        result = RelistResult()
        timestamp = self.clock()
        try:
            entries = self.source.list_containers()
        except Exception:  # Docker down or slow: health goes stale, the next period tries again
            log.exception("PLEG: unable to list containers")
            return result
        self._relist_time = timestamp
        current = self._observe(entries, result)
        for uid in sorted(set(self._pods) | set(current) | result.failed_pods):
            new = {cid: convert_state(ContainerState(rec.key[1])) for cid, rec in current.get(uid, {}).items()}
            old = self._pods.get(uid, {})
            if uid in result.failed_pods:
                self.cache.hold(uid)
                continue  # keep the old record: the change is found again and retried next relist
            events = compute_pod_events(uid, old, new)
            self._commit(uid, current.get(uid, {}), new, timestamp)
            if events:
                result.events += events
                self._deliver(uid, tuple(e for e in events if e.type is not EventType.CONTAINER_CHANGED))
        self.cache.update_time(timestamp)
        return result

    def _observe(self, entries: Iterable[dict[str, Any]], result: RelistResult) -> dict[str, dict[str, _Record]]:
        """Group the list by pod (in list order), inspecting only containers whose (id, State) is new. A
        failed or still pending inspect marks its pod failed: the pod keeps its old records and is read
        again next relist (a pending inspect is not repeated: the next relist takes its answer)."""
        listed: list[tuple[Identity, tuple[str, str]]] = []
        changed: list[tuple[tuple[str, str], Identity]] = []
        for entry in entries:
            identity = parse_entry(entry)
            if identity is None:
                continue
            key = (entry["Id"], list_state(entry).value)
            listed.append((identity, key))
            known = self._records.get(key[0])
            if known is None or known.key != key:
                changed.append((key, identity))
        inspected = self._inspect_all(changed, result)
        current: dict[str, dict[str, _Record]] = {}
        for identity, key in listed:
            cid = key[0]
            if key not in inspected:
                record = self._records[cid]
            else:
                outcome = inspected[key]
                if outcome is None:  # still being inspected (dockerd answers once the container's start ends)
                    result.failed_pods.add(identity.pod_uid)
                    continue
                if isinstance(outcome, BaseException):  # gone since the list, or Docker failing
                    log.info("PLEG: inspecting %s of pod %s failed: %s", cid[:12], identity.pod_uid, outcome)
                    result.failed_pods.add(identity.pod_uid)
                    continue
                record = _Record(key, identity, outcome)
            current.setdefault(identity.pod_uid, {})[cid] = record
        return current

    def _inspect_all(self, changed: Sequence[tuple[tuple[str, str], Identity]],
                     result: RelistResult) -> dict[tuple[str, str], AnyStatus | BaseException | None]:
        """list key → the container's status, the exception its inspect raised, or None while it is pending.

        Up to `inspect_concurrency` inspects run at once on a pool that outlives the relist: dockerd answers
        an inspect only once that container's start has finished, so a relist waits at most `inspect_wait`
        for them, commits the pods that are done and leaves the rest in flight; the next relist (requested
        as soon as one lands) takes their answers instead of asking again."""
        futures: dict[tuple[str, str], Future[AnyStatus]] = {}
        for key, identity in changed:
            future = self._inflight.get(key)
            if future is None:
                result.inspected += 1
                future = self._submit(key[0], identity)
                self._inflight[key] = future
            futures[key] = future
        for key in set(self._inflight) - set(futures):  # the container changed or went away: a stale answer
            self._inflight.pop(key)
        if futures:
            wait(futures.values(), timeout=self.inspect_wait)
        outcomes: dict[tuple[str, str], AnyStatus | BaseException | None] = {}
        for key, future in futures.items():
            if not future.done():
                outcomes[key] = None
                future.add_done_callback(lambda _: self._wake.set())  # relist as soon as it answers
                continue
            del self._inflight[key]
            failure = future.exception()
            outcomes[key] = future.result() if failure is None else failure
        return outcomes

    def _submit(self, container_id: str, identity: Identity) -> Future[AnyStatus]:
        try:
            return self._inspector.submit(self.source.inspect_status, container_id, identity)
        except RuntimeError as exc:  # the pool is shut down (stopped): a failed inspect, retried if relisted
            failed: Future[AnyStatus] = Future()
            failed.set_exception(exc)
            return failed

    def _commit(self, uid: str, records: dict[str, _Record], states: dict[str, PlegState], timestamp: float) -> None:
        for cid in self._pods.get(uid, {}):
            if cid not in records:
                self._records.pop(cid, None)
        self._records.update(records)
        if not records:
            self._pods.pop(uid, None)
            self.cache.delete(uid)
            return
        self._pods[uid] = states
        status = assemble(uid, ((r.identity, r.status) for r in records.values()), pod_ip=self.source.pod_ip)
        if self.cache.get(uid) != status or self.cache.is_held(uid):
            self.cache.set(uid, status, timestamp)

    def _deliver(self, uid: str, events: tuple[PodLifecycleEvent, ...]) -> None:
        if not events:
            return
        try:
            self._queue.put_nowait((uid, events))
        except queue.Full:
            self.discarded += len(events)
            log.error("PLEG: event queue full, %d events of pod %s dropped", len(events), uid)

    # ---- threads ----

    def start(self) -> None:
        if self._threads:
            return
        self._stop.clear()
        self._threads = [
            threading.Thread(target=self._relist_loop, name="pleg-relist", daemon=True),
            threading.Thread(target=self._dispatch_loop, name="pleg-dispatch", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def request_relist(self) -> None:
        """Relist as soon as the current relist (if any) ends, instead of at the end of the period: a pod
        worker calls this after a sync that started containers, once it has taken the time its next sync
        waits past (so the relist that answers it starts after that time)."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._inspector.shutdown(wait=False, cancel_futures=True)
        try:
            self._queue.put_nowait(None)
        except queue.Full:  # the dispatcher also checks the stop flag after every delivery
            pass
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads = []

    def _relist_loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self._wake.clear()  # before relisting: a request made during this relist gets one more
            self.relist()
            self._wake.wait(max(0.0, self.period - (time.monotonic() - started)))

    def _dispatch_loop(self) -> None:
        while not self._stop.is_set():
            item = self._queue.get()
            if item is None:
                return
            if self.on_events is not None:
                try:
                    self.on_events(*item)
                except Exception:  # a failing subscriber must not stop the others' events
                    log.exception("PLEG: event handler failed for pod %s", item[0])
