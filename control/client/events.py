"""The event recorder: components report what happened to an object as core/v1 Events.

Upstream: client-go tools/record/event.go (`recorderImpl.generateEvent`/`makeEvent`, `recordToSink`,
`recordEvent`) with the correlation of events_cache.go (here control/client/events_cache.py).

- Never blocks the caller: `event()` builds the Event and puts it on a bounded queue (upstream's
  broadcaster queue holds 1000, `maxQueuedEvents`, and drops when full, `DropIfChannelFull`); a full
  queue drops the event and counts it in `dropped`. One sender thread correlates and writes.
- The Event lives in the involved object's namespace, "default" for cluster-scoped objects, and is named
  `<object name>.<unix nanoseconds in hex>` (makeEvent). Names from one recorder strictly increase, so
  two events in the same microsecond do not collide (upstream would lose the second to AlreadyExists).
- Writing (recordEvent): a correlation with a patch PATCHes the existing Event; a 404 (the Event was
  deleted, e.g. by the API server's TTL) re-creates it without a resourceVersion. Any other API error is
  the server rejecting the event: not retried. Transport errors are retried up to 12 tries, 10 s apart
  (the first sleep randomised), as `maxTriesPerEvent`/`defaultSleepDuration`; meanwhile new events queue
  up and are dropped when the queue is full, as upstream ("hold everything while we keep trying").
- `shutdown(timeout)` stops taking events and sends what is queued, one try each, until the timeout.

Departure: an unknown event type or an object without a name raises ValueError at the call site, where
upstream logs and drops: both are bugs of the caller, found sooner this way.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

from control.apimachinery.meta import format_timestamp
from control.client.errors import ApiError, NotFound
from control.client.events_cache import EventCorrelator, unix_nanos
from control.client.paths import resource_path
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
EVENT_TYPES = frozenset({NORMAL, WARNING})
MAX_QUEUED_EVENTS = 1000
MAX_TRIES_PER_EVENT = 12
SLEEP_SECONDS = 10.0


class EventClient(Protocol):
    """The part of RESTClient the recorder uses."""

    def create(self, path: str, body: dict[str, Any], *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def patch(self, path: str, patch: dict[str, Any] | list[Any], *, patch_type: str = "merge") -> dict[str, Any]: ...


def object_reference(obj: Mapping[str, Any], *, field_path: str | None = None) -> dict[str, str]:
    """An ObjectReference for a wire object, or a copy of `obj` if it already is a reference
    (ref.GetReference; an object without kind/apiVersion, as list items come, keeps them empty)."""
    if "metadata" in obj:
        metadata = obj.get("metadata") or {}
        ref = {"kind": obj.get("kind", ""), "namespace": metadata.get("namespace", ""),
               "name": metadata.get("name", ""), "uid": metadata.get("uid", ""),
               "apiVersion": obj.get("apiVersion", ""), "resourceVersion": metadata.get("resourceVersion", "")}
    else:
        ref = {key: obj.get(key, "") for key in ("kind", "namespace", "name", "uid", "apiVersion",
                                                   "resourceVersion", "fieldPath")}
    if field_path:
        ref["fieldPath"] = field_path
    if not ref.get("name"):
        raise ValueError("cannot record an event about an object without a name")
    return {key: value for key, value in ref.items() if value}


class EventRecorder:
    """Records events about objects for one component (EventSource {component, host})."""

    def __init__(self, client: EventClient, *, component: str, host: str = "", clock: Clock | None = None,
                 max_queued: int = MAX_QUEUED_EVENTS, max_tries: int = MAX_TRIES_PER_EVENT,
                 sleep_seconds: float = SLEEP_SECONDS, correlator: EventCorrelator | None = None) -> None:
        self._client = client
        self._source = {"component": component, **({"host": host} if host else {})}
        self._clock: Clock = clock or RealClock()
        self._max_tries = max_tries
        self._sleep_seconds = sleep_seconds
        self._correlator = correlator or EventCorrelator(self._clock)
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=max_queued)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending = 0  # queued or being sent
        self._last_nanos = 0
        self._closed = False
        self._stopping = threading.Event()  # set by shutdown: no more retries or sleeps
        self.dropped = 0  # events lost to a full queue, a closed recorder or an exhausted retry budget
        self.sent = 0  # creates and patches the server accepted
        self._thread = threading.Thread(target=self._run, name=f"events-{component}", daemon=True)
        self._thread.start()

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str, *,
              field_path: str | None = None) -> None:
        """Queue an event about `obj` (a wire object or an ObjectReference); returns at once."""
        if type not in EVENT_TYPES:
            raise ValueError(f"unsupported event type {type!r} (want one of {sorted(EVENT_TYPES)})")
        ref = object_reference(obj, field_path=field_path)
        event = self._make_event(ref, type, reason, message)
        with self._lock:
            if self._closed:
                self.dropped += 1
                return
            try:
                self._queue.put_nowait(event)
                self._pending += 1
            except queue.Full:
                self.dropped += 1
                log.error("too many queued events, dropped event %s %s on %s", type, reason, ref.get("name"))

    def eventf(self, obj: Mapping[str, Any], type: str, reason: str, fmt: str, *args: Any,
               field_path: str | None = None) -> None:
        """`event` with a %-format message (Go's Sprintf is spelled % in Python)."""
        self.event(obj, type, reason, fmt % args if args else fmt, field_path=field_path)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every event queued so far has been sent or given up; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop taking events and send what is queued (one try each) for up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._lock:
            first = not self._closed
            self._closed = True
            self._stopping.set()
        if first:
            try:  # the sentinel may wait for room: the sender keeps draining meanwhile
                self._queue.put(None, timeout=timeout)
            except queue.Full:
                pass
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            log.warning("event sender did not finish within %.1fs; %d events unsent", timeout, self._queue.qsize())

    def _make_event(self, ref: dict[str, str], type: str, reason: str, message: str) -> dict[str, Any]:
        now = self._clock.now()
        with self._lock:  # strictly increasing names even within one clock tick
            nanos = max(unix_nanos(now), self._last_nanos + 1)
            self._last_nanos = nanos
        stamp = format_timestamp(now)
        return {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{ref['name']}.{nanos:x}", "namespace": ref.get("namespace") or "default"},
            "involvedObject": ref, "reason": reason, "message": message, "type": type,
            "source": dict(self._source), "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
            "reportingComponent": self._source["component"], "reportingInstance": self._source.get("host", ""),
        }

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            if event is None:
                return
            try:
                self._record_to_sink(event)
            except Exception:
                log.exception("unexpected error recording event %s", event.get("metadata", {}).get("name"))
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    def _record_to_sink(self, event: dict[str, Any]) -> None:
        correlation = self._correlator.correlate(event)
        if correlation.skip or correlation.event is None or correlation.key is None:
            return
        for tries in range(1, self._max_tries + 1):
            if self._write(correlation.event, correlation.patch, correlation.key):
                return
            if self._stopping.is_set() or tries == self._max_tries:
                break
            delay = self._sleep_seconds * (random.random() if tries == 1 else 1.0)
            if self._stopping.wait(delay):
                break
        with self._lock:
            self.dropped += 1
        log.error("unable to write event %s (gave up)", correlation.event["metadata"]["name"])

    def _write(self, event: dict[str, Any], patch: dict[str, Any] | None, key: tuple[str, ...]) -> bool:
        """recordEvent: True when written or abandoned, False when worth another try."""
        namespace = event["metadata"]["namespace"]
        try:
            stored = None
            if patch is not None:
                try:
                    stored = self._client.patch(
                        resource_path("v1", "events", namespace=namespace, name=event["metadata"]["name"]),
                        patch, patch_type="strategic")
                except NotFound:
                    stored = None
            if stored is None:
                body = {**event, "metadata": {k: v for k, v in event["metadata"].items() if k != "resourceVersion"}}
                stored = self._client.create(resource_path("v1", "events", namespace=namespace), body)
        except ApiError as error:  # the server rejected it: sending it again would not help
            log.log(logging.DEBUG if error.code == 409 else logging.ERROR,
                    "server rejected event %s: %s", event["metadata"]["name"], error)
            return True
        except Exception as error:  # noqa: BLE001 - transport trouble of any kind: retry
            log.warning("unable to write event %s (may retry): %s", event["metadata"]["name"], error)
            return False
        with self._lock:
            self.sent += 1
        self._correlator.update_state(key, stored)
        return True

