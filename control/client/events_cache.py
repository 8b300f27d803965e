"""Event correlation: spam filter, aggregation of similar events, counting of identical ones.

Upstream: client-go tools/record/events_cache.go (`EventCorrelator`, `EventSourceObjectSpamFilter`,
`EventAggregator`, `eventLogger`, `getEventKey`, `getSpamKey`, `EventAggregatorByReasonFunc`). The numbers
are upstream's: LRU caches of 4096 entries; more than 10 events that differ only in their message within
600 s are combined into one "(combined from similar events): <message>" event; a token bucket per
source + involved object with a burst of 25 and a refill of 1 token per 300 s.

`EventCorrelator.correlate(event)` runs the three stages in upstream's order: aggregate (which may swap the
event for a combined one and picks the cache key), observe (a key already seen turns into a patch that
raises `count` and `lastTimestamp` of the Event the server already holds), then filter (the spam filter
sees the observed event; a filtered event is dropped but was still counted, as upstream). Nothing here
does I/O: the sender applies the result and reports the server's answer back with `update_state`.

The "identical event" window is the observation LRU (upstream has no time limit on it); an Event the
server has meanwhile deleted is re-created by the sender on the 404 of its patch.

Events are core/v1 wire dicts; time comes from an injected clock (control/util/clock.py, its `now()`)
so tests can step it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from control.apimachinery.meta import format_timestamp
from control.util.clock import Clock

MAX_LRU_CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_SECONDS = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "

_V = TypeVar("_V")


class LRU(Generic[_V]):
    """A bounded mapping that forgets the least recently used key (groupcache/lru as upstream uses it)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[str, _V] = OrderedDict()

    def get(self, key: str) -> _V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def add(self, key: str, value: _V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def _source(event: dict[str, Any]) -> tuple[str, str]:
    source = event.get("source") or {}
    return source.get("component", ""), source.get("host", "")


def _involved(event: dict[str, Any], *keys: str) -> tuple[str, ...]:
    involved = event.get("involvedObject") or {}
    return tuple(involved.get(key, "") for key in keys)


def event_key(event: dict[str, Any]) -> tuple[str, ...]:
    """What makes two events identical (getEventKey): source, involved object, type, reason, message.
    A tuple rather than upstream's joined string, so fields cannot run into each other."""
    return (*_source(event), *_involved(event, "kind", "namespace", "name", "fieldPath", "uid", "apiVersion"),
            event.get("type", ""), event.get("reason", ""), event.get("message", ""))


def spam_key(event: dict[str, Any]) -> tuple[str, ...]:
    """One token bucket per source and involved object (getSpamKey)."""
    return (*_source(event), *_involved(event, "kind", "namespace", "name", "uid", "apiVersion"))


def aggregate_key(event: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """(group, member) as EventAggregatorByReasonFunc: events of a group differ only in their message."""
    group = (*_source(event), *_involved(event, "kind", "namespace", "name", "uid", "apiVersion"),
             event.get("type", ""), event.get("reason", ""), event.get("reportingComponent", ""),
             event.get("reportingInstance", ""))
    return group, event.get("message", "")


def event_name(object_name: str, moment: datetime) -> str:
    """`<object name>.<unix nanoseconds in hex>` as upstream's makeEvent and EventAggregate name Events."""
    return f"{object_name}.{unix_nanos(moment):x}"


def unix_nanos(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


class TokenBucket:
    """flowcontrol's token bucket, TryAccept only: starts full, refills `qps` tokens a second."""

    def __init__(self, *, qps: float, burst: int, now: float) -> None:
        self._qps = qps
        self._burst = burst
        self._tokens = float(burst)
        self._last = now

    def try_accept(self, now: float) -> bool:
        self._tokens = min(float(self._burst), self._tokens + max(0.0, now - self._last) * self._qps)
        self._last = max(self._last, now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False


class SpamFilter:
    """EventSourceObjectSpamFilter: True means drop the event."""

    def __init__(self, clock: Clock, *, burst: int = SPAM_BURST, qps: float = SPAM_QPS,
                 cache_size: int = MAX_LRU_CACHE_ENTRIES) -> None:
        self._clock = clock
        self._burst = burst
        self._qps = qps
        self._buckets: LRU[TokenBucket] = LRU(cache_size)

    def filter(self, event: dict[str, Any]) -> bool:
        now = self._clock.now().timestamp()
        key = "\x00".join(spam_key(event))
        bucket = self._buckets.get(key) or TokenBucket(qps=self._qps, burst=self._burst, now=now)
        self._buckets.add(key, bucket)
        return not bucket.try_accept(now)


@dataclass
class _AggregateRecord:
    messages: set[str]
    last: datetime


class Aggregator:
    """EventAggregator: once a group holds `max_events` distinct messages seen less than `interval`
    apart, every further event of the group becomes one combined event (same key each time, so it is
    counted up rather than created anew)."""

    def __init__(self, clock: Clock, *, max_events: int = AGGREGATE_MAX_EVENTS,
                 interval_seconds: float = AGGREGATE_INTERVAL_SECONDS,
                 cache_size: int = MAX_LRU_CACHE_ENTRIES) -> None:
        self._clock = clock
        self._max_events = max_events
        self._interval = interval_seconds
        self._records: LRU[_AggregateRecord] = LRU(cache_size)

    def aggregate(self, event: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The event to send (maybe a new combined one) and the key to count it under."""
        now = self._clock.now()
        group, member = aggregate_key(event)
        group_key = "\x00".join(group)
        record = self._records.get(group_key)
        if record is None or (now - record.last).total_seconds() > self._interval:
            record = _AggregateRecord(set(), now)
        record.messages.add(member)
        record.last = now
        self._records.add(group_key, record)
        if len(record.messages) < self._max_events:
            return event, event_key(event)
        record.messages.pop()  # the set never grows past the threshold (upstream's PopAny)
        stamp = format_timestamp(now)
        combined = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": event_name(event["involvedObject"].get("name", ""), now),
                         "namespace": event["metadata"]["namespace"]},
            "involvedObject": dict(event["involvedObject"]),
            "reason": event.get("reason", ""), "message": COMBINED_PREFIX + event.get("message", ""),
            "source": dict(event.get("source") or {}), "type": event.get("type", ""),
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
            "reportingComponent": event.get("reportingComponent", ""),
            "reportingInstance": event.get("reportingInstance", ""),
        }
        return combined, ("aggregate", *group)


@dataclass(frozen=True)
class _Observation:
    count: int
    first_timestamp: str
    name: str
    resource_version: str


@dataclass(frozen=True)
class Correlation:
    """What the sender does with one event: nothing (`skip`), create `event`, or, when `patch` is set,
    patch the existing Event `event["metadata"]["name"]` (and create `event` if that one is gone)."""

    event: dict[str, Any] | None
    patch: dict[str, Any] | None
    key: tuple[str, ...] | None
    skip: bool = False


class EventCorrelator:
    """Filters, aggregates and counts events before they reach the API server (one per sender thread,
    so it needs no lock)."""

    def __init__(self, clock: Clock, *, spam_burst: int = SPAM_BURST, spam_qps: float = SPAM_QPS,
                 max_events: int = AGGREGATE_MAX_EVENTS, interval_seconds: float = AGGREGATE_INTERVAL_SECONDS,
                 cache_size: int = MAX_LRU_CACHE_ENTRIES) -> None:
        self._clock = clock
        self._spam = SpamFilter(clock, burst=spam_burst, qps=spam_qps, cache_size=cache_size)
        self._aggregator = Aggregator(clock, max_events=max_events, interval_seconds=interval_seconds,
                                      cache_size=cache_size)
        self._observed: LRU[_Observation] = LRU(cache_size)

    def correlate(self, event: dict[str, Any]) -> Correlation:
        aggregated, key = self._aggregator.aggregate(event)
        observed, patch = self._observe(aggregated, key)
        if self._spam.filter(observed):
            return Correlation(None, None, None, skip=True)
        return Correlation(observed, patch, key)

    def update_state(self, key: tuple[str, ...], stored: dict[str, Any]) -> None:
        """Remember the server's copy (name, resourceVersion, count) so the next identical event patches it."""
        metadata = stored.get("metadata") or {}
        self._observed.add("\x00".join(key), _Observation(
            int(stored.get("count") or 1), stored.get("firstTimestamp") or "", metadata.get("name", ""),
            metadata.get("resourceVersion", "")))

    def _observe(self, event: dict[str, Any], key: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """eventObserve: a key seen before becomes the same Event with count + 1 and a patch to send."""
        observed = {**event, "metadata": dict(event["metadata"])}
        last = self._observed.get("\x00".join(key))
        patch = None
        if last is not None:
            observed["metadata"]["name"] = last.name
            observed["metadata"]["resourceVersion"] = last.resource_version
            observed["firstTimestamp"] = last.first_timestamp
            observed["count"] = last.count + 1
            # What changes on the server's copy: upstream's two-way strategic patch of the same fields.
            patch = {"count": observed["count"], "lastTimestamp": observed["lastTimestamp"],
                     "message": observed["message"]}
        self._observed.add("\x00".join(key), _Observation(
            observed["count"], observed["firstTimestamp"], observed["metadata"]["name"],
            observed["metadata"].get("resourceVersion", "")))
        return observed, patch
