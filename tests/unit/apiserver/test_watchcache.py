"""The watch cache over a real SQLite store: fan-out, replay, 410 for old revisions, slow watchers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from control.apiserver.storage.watchcache import TooOld, WatchCache
from control.storage.interface import EventType
from control.storage.sqlite import SQLiteStorage


class CountingStorage(SQLiteStorage):
    """Counts store watches, to show many client watches cost one."""

    watches = 0

    def watch(self, prefix, *, after):
        CountingStorage.watches += 1
        return super().watch(prefix, after=after)


@pytest.fixture
def store(tmp_path: Path):
    s = CountingStorage(str(tmp_path / "state.db"))
    CountingStorage.watches = 0
    yield s
    s.close()


async def collect(sub, n: int, timeout: float = 5.0) -> list:
    events = []
    while len(events) < n:
        event = await sub.next(timeout)
        if event is None:
            break
        events.append(event)
    return events


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_hundred_watchers_get_every_event_from_one_store_watch(store):
    async def scenario():
        cache = WatchCache(store)
        await cache.start()
        subs = [cache.subscribe("/registry/pods/", cache.revision) for _ in range(100)]
        rec = await asyncio.to_thread(store.create, "/registry/pods/default/a", b"1")
        await asyncio.to_thread(store.update, "/registry/pods/default/a", b"2", expected_revision=rec.mod_revision)
        await asyncio.to_thread(store.delete, "/registry/pods/default/a")
        got = [await collect(s, 3) for s in subs]
        await cache.stop()
        return got

    got = run(scenario())
    assert {tuple(e.type for e in events) for events in got} == {
        (EventType.ADDED, EventType.MODIFIED, EventType.DELETED)}
    assert CountingStorage.watches == 1


def test_prefix_filters_and_replay_from_an_older_revision_in_the_window(store):
    async def scenario():
        cache = WatchCache(store)
        await cache.start()
        start = cache.revision
        await asyncio.to_thread(store.create, "/registry/pods/default/a", b"p")
        await asyncio.to_thread(store.create, "/registry/services/default/a", b"s")
        last = await asyncio.to_thread(store.create, "/registry/pods/kube-system/b", b"p2")
        assert await cache.wait_for(last.mod_revision, 5)
        late = cache.subscribe("/registry/pods/", start)  # subscribes after the writes: replayed
        mid = cache.subscribe("/registry/pods/", last.mod_revision - 1)
        got = await collect(late, 2), await collect(mid, 1)
        await cache.stop()
        return got

    late, mid = run(scenario())
    assert [e.key for e in late] == ["/registry/pods/default/a", "/registry/pods/kube-system/b"]
    assert [e.key for e in mid] == ["/registry/pods/kube-system/b"]


def test_revision_older_than_the_window_is_too_old(store):
    async def scenario():
        cache = WatchCache(store, capacity=3)
        await cache.start()
        start = cache.revision
        for i in range(5):
            rec = await asyncio.to_thread(store.create, f"/registry/pods/default/p{i}", b"x")
        assert await cache.wait_for(rec.mod_revision, 5)
        with pytest.raises(TooOld) as excinfo:
            cache.subscribe("/registry/pods/", start)
        ok = cache.subscribe("/registry/pods/", rec.mod_revision - 3)  # exactly the window
        got = await collect(ok, 3)
        await cache.stop()
        return excinfo.value, got

    error, got = run(scenario())
    assert error.requested < error.oldest
    assert [e.key[-2:] for e in got] == ["p2", "p3", "p4"]


def test_a_watcher_that_falls_behind_is_closed_not_buffered(store):
    async def scenario():
        cache = WatchCache(store, max_pending=2)
        await cache.start()
        slow = cache.subscribe("/registry/", cache.revision)
        for i in range(4):
            rec = await asyncio.to_thread(store.create, f"/registry/pods/default/p{i}", b"x")
        assert await cache.wait_for(rec.mod_revision, 5)
        got = await collect(slow, 10, timeout=0.5)
        await cache.stop()
        return slow, got

    slow, got = run(scenario())
    assert slow.closed and slow.overflowed
    assert len(got) == 2


def test_stop_closes_every_subscriber(store):
    async def scenario():
        cache = WatchCache(store)
        await cache.start()
        sub = cache.subscribe("/registry/", cache.revision)
        await cache.stop()
        return sub, await sub.next(1)

    sub, event = run(scenario())
    assert sub.closed and event is None


def test_older_than_the_window_is_replayed_from_the_store_then_handed_over(store):
    async def scenario():
        cache = WatchCache(store, capacity=3)
        await cache.start()
        start = cache.revision
        for i in range(5):
            rec = await asyncio.to_thread(store.create, f"/registry/pods/default/p{i}", b"x")
        await asyncio.to_thread(store.create, "/registry/services/default/s", b"s")  # filtered by prefix
        assert await cache.wait_for(rec.mod_revision, 5)
        sub = await cache.subscribe_from("/registry/pods/", start)
        history = await collect(sub, 5)
        for i in range(5, 7):
            await asyncio.to_thread(store.create, f"/registry/pods/default/p{i}", b"x")
        live = await collect(sub, 2)
        extra = await sub.next(0.3)
        replaying = sub.replaying
        await cache.stop()
        return history, live, extra, replaying

    history, live, extra, replaying = run(scenario())
    assert [e.key[-2:] for e in history + live] == [f"p{i}" for i in range(7)]
    assert extra is None and not replaying  # handed over to the shared window: one store watch again


def test_a_restarted_cache_serves_revisions_from_before_the_restart(store):
    async def scenario():
        first = WatchCache(store)
        await first.start()
        before = first.revision
        a = await asyncio.to_thread(store.create, "/registry/pods/default/a", b"1")
        await asyncio.to_thread(store.update, "/registry/pods/default/a", b"2", expected_revision=a.mod_revision)
        await first.stop()
        second = WatchCache(store)  # a new server process: its window starts empty at the current revision
        await second.start()
        assert second.revision > before
        sub = await second.subscribe_from("/registry/pods/", before)
        await asyncio.to_thread(store.delete, "/registry/pods/default/a")
        got = await collect(sub, 3)
        extra = await sub.next(0.3)
        await second.stop()
        return got, extra

    got, extra = run(scenario())
    assert [e.type for e in got] == [EventType.ADDED, EventType.MODIFIED, EventType.DELETED]
    assert [e.revision for e in got] == sorted({e.revision for e in got})
    assert extra is None


def test_handover_under_concurrent_writes_has_no_gap_and_no_duplicate(store):
    async def scenario():
        cache = WatchCache(store, capacity=5)
        await cache.start()
        start = cache.revision
        for i in range(20):
            await asyncio.to_thread(store.create, f"/registry/pods/default/old{i}", b"x")

        def writer():
            for i in range(60):
                store.create(f"/registry/pods/default/new{i}", b"x")

        writing = asyncio.create_task(asyncio.to_thread(writer))
        sub = await cache.subscribe_from("/registry/", start)
        got = await collect(sub, 80)
        await writing
        await cache.stop()
        return got

    got = run(scenario())
    keys = [e.key.rsplit("/", 1)[1] for e in got]
    assert keys == [f"old{i}" for i in range(20)] + [f"new{i}" for i in range(60)]


def test_a_compacted_revision_is_too_old_even_with_history_replay(store):
    async def scenario():
        cache = WatchCache(store, capacity=2)
        await cache.start()
        start = cache.revision
        for i in range(4):
            rec = await asyncio.to_thread(store.create, f"/registry/pods/default/p{i}", b"x")
        assert await cache.wait_for(rec.mod_revision, 5)
        await asyncio.to_thread(store.compact, rec.mod_revision - 1)
        with pytest.raises(TooOld) as excinfo:
            await cache.subscribe_from("/registry/pods/", start)
        ok = await cache.subscribe_from("/registry/pods/", rec.mod_revision - 1)
        got = await collect(ok, 1)
        await cache.stop()
        return excinfo.value, got

    error, got = run(scenario())
    assert error.requested < error.oldest
    assert [e.key[-2:] for e in got] == ["p3"]
