"""The storage contract (control/storage/interface.py), run unchanged against SQLite and a real etcd.

Every test gets `store` (conftest.py) for each backend. Revisions are only ever compared with ones the
test itself observed, since etcd's revision carries over from earlier tests.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable

import pytest
import requests

from control.storage.interface import (
    Compacted,
    Conflict,
    Event,
    EventType,
    KeyExists,
    KeyNotFound,
    Record,
    Storage,
    StorageError,
    Watch,
)

ADDED, MODIFIED, DELETED = EventType.ADDED, EventType.MODIFIED, EventType.DELETED
PODS = "/registry/pods/"


def collect(watch: Watch, count: int, timeout: float = 10) -> list[Event]:
    """Exactly `count` events (fails on fewer within `timeout`), then checks no extra one is waiting."""
    events: list[Event] = []
    deadline = time.monotonic() + timeout
    while len(events) < count and time.monotonic() < deadline:
        events.extend(watch.next(0.2))
    assert len(events) == count, events
    assert watch.next(0.1) == []
    return events


def summary(events: list[Event]) -> list[tuple]:
    return [(e.type, e.key, e.value, e.prev_value) for e in events]


# -- create / get / update / delete -------------------------------------------------------------------------


def test_create_then_get(store: Storage) -> None:
    before = store.revision()
    record = store.create(PODS + "default/a", b"one")
    assert record == Record(PODS + "default/a", b"one", record.mod_revision, record.mod_revision)
    assert record.mod_revision > before
    assert store.get(PODS + "default/a") == record
    assert store.get(PODS + "default/missing") is None
    with pytest.raises(KeyExists):
        store.create(PODS + "default/a", b"two")
    assert store.get(PODS + "default/a") == record


def test_empty_value_round_trips(store: Storage) -> None:
    record = store.create(PODS + "default/empty", b"")
    assert store.get(PODS + "default/empty") == record
    assert record.value == b""


def test_update_with_current_revision(store: Storage) -> None:
    created = store.create(PODS + "a", b"1")
    updated = store.update(PODS + "a", b"2", expected_revision=created.mod_revision)
    assert updated.value == b"2"
    assert updated.create_revision == created.create_revision
    assert updated.mod_revision > created.mod_revision
    assert store.get(PODS + "a") == updated


def test_update_with_stale_revision_conflicts_with_current(store: Storage) -> None:
    created = store.create(PODS + "a", b"1")
    current = store.update(PODS + "a", b"2", expected_revision=created.mod_revision)
    with pytest.raises(Conflict) as caught:
        store.update(PODS + "a", b"3", expected_revision=created.mod_revision)
    assert caught.value.current == current
    assert store.get(PODS + "a") == current


def test_delete_with_precondition(store: Storage) -> None:
    created = store.create(PODS + "a", b"1")
    current = store.update(PODS + "a", b"2", expected_revision=created.mod_revision)
    with pytest.raises(Conflict) as caught:
        store.delete(PODS + "a", expected_revision=created.mod_revision)
    assert caught.value.current == current
    deleted = store.delete(PODS + "a", expected_revision=current.mod_revision)
    assert (deleted.key, deleted.value, deleted.create_revision) == (PODS + "a", b"2", created.create_revision)
    assert deleted.mod_revision > current.mod_revision
    assert store.get(PODS + "a") is None


def test_delete_without_precondition_then_recreate(store: Storage) -> None:
    created = store.create(PODS + "a", b"1")
    deleted = store.delete(PODS + "a")
    assert (deleted.value, deleted.create_revision) == (b"1", created.create_revision)
    again = store.create(PODS + "a", b"new")
    assert again.create_revision == again.mod_revision > deleted.mod_revision
    assert store.get(PODS + "a") == again


def _update(key: str, expected: int) -> Callable[[Storage], object]:
    return lambda store: store.update(key, b"x", expected_revision=expected)


@pytest.mark.parametrize(
    "prepare, operation",
    [
        pytest.param(lambda s: None, _update(PODS + "a", 1), id="update-missing"),
        pytest.param(lambda s: None, lambda s: s.delete(PODS + "a"), id="delete-missing"),
        pytest.param(lambda s: None, lambda s: s.delete(PODS + "a", expected_revision=1), id="delete-missing-rev"),
        pytest.param(lambda s: None, _update(PODS + "a", 0), id="update-missing-rev-0"),
        pytest.param(lambda s: s.delete(s.create(PODS + "a", b"1").key), lambda s: s.delete(PODS + "a"),
                     id="delete-twice"),
        pytest.param(lambda s: s.delete(s.create(PODS + "a", b"1").key),
                     lambda s: s.update(PODS + "a", b"x", expected_revision=s.revision()), id="update-deleted"),
    ],
)
def test_key_not_found(store: Storage, prepare: Callable, operation: Callable) -> None:
    prepare(store)
    before = store.revision()
    with pytest.raises(KeyNotFound):
        operation(store)
    assert store.get(PODS + "a") is None
    assert store.revision() == before  # a refused write leaves no trace


def test_revision_strictly_increases_across_writes(store: Storage) -> None:
    seen = [store.revision()]
    a = store.create(PODS + "a", b"1")
    seen.append(a.mod_revision)
    seen.append(store.create("/registry/services/b", b"1").mod_revision)
    with pytest.raises(Conflict):
        store.update(PODS + "a", b"2", expected_revision=a.mod_revision - 1)
    assert store.revision() == seen[-1]
    a = store.update(PODS + "a", b"2", expected_revision=a.mod_revision)
    seen.append(a.mod_revision)
    seen.append(store.delete(PODS + "a").mod_revision)
    seen.append(store.create(PODS + "a", b"3").mod_revision)
    assert seen == sorted(set(seen)), seen
    assert store.revision() == seen[-1]


# -- list -------------------------------------------------------------------------------------------------


def test_list_matches_prefix_only(store: Storage) -> None:
    for key in (PODS + "ns/a", PODS + "ns/b", "/registry/podsx/ns/c", "/registry/pods", "/registry/pod/x"):
        store.create(key, key.encode())
    result = store.list(PODS)
    assert [r.key for r in result.records] == [PODS + "ns/a", PODS + "ns/b"]
    assert [r.value for r in result.records] == [b"/registry/pods/ns/a", b"/registry/pods/ns/b"]
    assert result.more is False
    assert result.revision == store.revision()
    assert store.count(PODS) == 2
    assert store.count("/registry/podsx/") == 1
    assert [r.key for r in store.list(PODS + "ns/a").records] == [PODS + "ns/a"]


def test_list_is_sorted_and_skips_deleted(store: Storage) -> None:
    names = ["m", "b", "z", "a", "q", "c"]
    for name in names:
        store.create(PODS + name, b"v")
    store.delete(PODS + "q")
    assert [r.key for r in store.list(PODS).records] == [PODS + n for n in sorted(set(names) - {"q"})]
    assert store.count(PODS) == 5


def test_list_pages_with_limit_and_start_after_at_one_revision(store: Storage) -> None:
    keys = [f"{PODS}ns/p{i}" for i in range(7)]
    for key in keys:
        store.create(key, b"old")
    first = store.list(PODS, limit=3)
    assert ([r.key for r in first.records], first.more) == (keys[:3], True)
    # Writes between pages must not show: the next pages are read at the first page's revision.
    store.create(f"{PODS}ns/p35", b"new")
    store.delete(keys[4])
    store.update(keys[5], b"new", expected_revision=store.get(keys[5]).mod_revision)
    pages = [first]
    while pages[-1].more:
        pages.append(store.list(PODS, start_after=pages[-1].records[-1].key, limit=3, revision=first.revision))
    assert [(len(p.records), p.more, p.revision) for p in pages] == [
        (3, True, first.revision), (3, True, first.revision), (1, False, first.revision)]
    assert [r.key for p in pages for r in p.records] == keys
    assert {r.value for p in pages for r in p.records} == {b"old"}
    # An exact fit says no more.
    assert store.list(PODS, limit=7, revision=first.revision).more is False


def test_list_at_old_revision_sees_old_state(store: Storage) -> None:
    a = store.create(PODS + "a", b"a1")
    store.create(PODS + "b", b"b1")
    then = store.revision()
    store.update(PODS + "a", b"a2", expected_revision=a.mod_revision)
    store.delete(PODS + "b")
    store.create(PODS + "c", b"c1")
    old = store.list(PODS, revision=then)
    assert [(r.key, r.value) for r in old.records] == [(PODS + "a", b"a1"), (PODS + "b", b"b1")]
    assert old.revision == then
    assert [(r.key, r.value) for r in store.list(PODS).records] == [(PODS + "a", b"a2"), (PODS + "c", b"c1")]


def test_list_at_future_revision_raises(store: Storage) -> None:
    store.create(PODS + "a", b"1")
    with pytest.raises(StorageError) as caught:
        store.list(PODS, revision=store.revision() + 100)
    assert type(caught.value) is StorageError


def test_list_at_compacted_revision_raises(store: Storage) -> None:
    a = store.create(PODS + "a", b"1")
    old = store.revision()
    a = store.update(PODS + "a", b"2", expected_revision=a.mod_revision)
    store.update(PODS + "a", b"3", expected_revision=a.mod_revision)
    store.create(PODS + "b", b"1")
    target = store.revision() - 1
    store.compact(target)
    assert store.compact_revision() >= target
    with pytest.raises(Compacted) as caught:
        store.list(PODS, revision=old)
    assert caught.value.requested == old
    assert caught.value.compact_revision >= target
    kept = store.list(PODS, revision=target)  # the compacted revision itself is still readable
    assert [(r.key, r.value) for r in kept.records] == [(PODS + "a", b"3")]
    assert [(r.key, r.value) for r in store.list(PODS).records] == [(PODS + "a", b"3"), (PODS + "b", b"1")]


# -- watch ------------------------------------------------------------------------------------------------


def test_watch_replays_history_then_delivers_live(store: Storage) -> None:
    after = store.revision()
    a1 = store.create(PODS + "a", b"a1")
    a2 = store.update(PODS + "a", b"a2", expected_revision=a1.mod_revision)
    b1 = store.create(PODS + "b", b"b1")
    store.create("/registry/services/s", b"s1")  # not under the prefix
    gone = store.delete(PODS + "a")
    watch = store.watch(PODS, after=after)
    try:
        history = collect(watch, 4)
        assert summary(history) == [
            (ADDED, PODS + "a", b"a1", None),
            (MODIFIED, PODS + "a", b"a2", b"a1"),
            (ADDED, PODS + "b", b"b1", None),
            (DELETED, PODS + "a", b"a2", b"a2"),
        ]
        assert [e.revision for e in history] == [a1.mod_revision, a2.mod_revision, b1.mod_revision, gone.mod_revision]
        assert [e.create_revision for e in history] == [a1.mod_revision] * 2 + [b1.mod_revision, a1.mod_revision]

        def write_later() -> None:
            time.sleep(0.2)
            b2 = store.update(PODS + "b", b"b2", expected_revision=b1.mod_revision)
            store.create("/registry/podsx/x", b"no")
            store.delete(PODS + "b", expected_revision=b2.mod_revision)

        writer = threading.Thread(target=write_later)
        writer.start()
        live = collect(watch, 2)
        writer.join()
        assert summary(live) == [(MODIFIED, PODS + "b", b"b2", b"b1"), (DELETED, PODS + "b", b"b2", b"b2")]
        assert history[-1].revision < live[0].revision < live[1].revision
    finally:
        watch.close()


def test_watch_from_a_revision_sees_only_later_events(store: Storage) -> None:
    a = store.create(PODS + "a", b"1")
    store.update(PODS + "a", b"2", expected_revision=a.mod_revision)
    watch = store.watch(PODS, after=a.mod_revision)
    try:
        assert summary(collect(watch, 1)) == [(MODIFIED, PODS + "a", b"2", b"1")]
    finally:
        watch.close()


def test_watch_filters_by_prefix(store: Storage) -> None:
    after = store.revision()
    watches = {prefix: store.watch(prefix, after=after) for prefix in (PODS, "/registry/podsx/", "/registry/")}
    try:
        for key in (PODS + "a", "/registry/podsx/b", "/registry/pods", "/registry/services/c"):
            store.create(key, b"v")
        assert [e.key for e in collect(watches[PODS], 1)] == [PODS + "a"]
        assert [e.key for e in collect(watches["/registry/podsx/"], 1)] == ["/registry/podsx/b"]
        assert [e.key for e in collect(watches["/registry/"], 4)] == [
            PODS + "a", "/registry/podsx/b", "/registry/pods", "/registry/services/c"]
    finally:
        for watch in watches.values():
            watch.close()


def test_watch_next_times_out_empty_and_close_ends_it(store: Storage) -> None:
    watch = store.watch(PODS, after=store.revision())
    started = time.monotonic()
    assert watch.next(0.3) == []
    assert 0.25 <= time.monotonic() - started < 2
    watch.close()
    assert watch.next(0.1) == []


def test_watch_from_compacted_revision_raises(store: Storage) -> None:
    a = store.create(PODS + "a", b"1")
    old = store.revision()
    a = store.update(PODS + "a", b"2", expected_revision=a.mod_revision)
    store.update(PODS + "a", b"3", expected_revision=a.mod_revision)
    target = store.revision()
    store.compact(target)
    with pytest.raises(Compacted) as caught:
        store.watch(PODS, after=old - 1)
    assert caught.value.compact_revision >= target
    watch = store.watch(PODS, after=store.compact_revision())  # from the compacted revision on works
    try:
        store.create(PODS + "b", b"1")
        assert summary(collect(watch, 1)) == [(ADDED, PODS + "b", b"1", None)]
    finally:
        watch.close()


def test_many_watchers_each_get_every_event(store: Storage) -> None:
    after = store.revision()
    watches = [store.watch(PODS, after=after) for _ in range(20)]
    try:
        def write() -> None:
            record = store.create(PODS + "a", b"0")
            for i in range(1, 40):
                record = store.update(PODS + "a", str(i).encode(), expected_revision=record.mod_revision)

        writer = threading.Thread(target=write)
        writer.start()
        results = [collect(w, 40) for w in watches]
        writer.join()
        for events in results:
            assert [e.value for e in events] == [str(i).encode() for i in range(40)]
            assert [e.revision for e in events] == sorted({e.revision for e in events})
    finally:
        for watch in watches:
            watch.close()


# -- races ------------------------------------------------------------------------------------------------


def _race(n: int, attempt: Callable[[], Record]) -> tuple[list[Record], list[Exception]]:
    """Run `attempt` in n threads released together; their results and errors."""
    barrier = threading.Barrier(n)
    won: list[Record] = []
    lost: list[Exception] = []

    def run() -> None:
        barrier.wait()
        try:
            won.append(attempt())
        except (Conflict, KeyExists, KeyNotFound) as exc:
            lost.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won, lost


def test_racing_updates_exactly_one_wins(store: Storage) -> None:
    start = store.create(PODS + "a", b"start")
    for _ in range(3):
        won, lost = _race(8, lambda start=start: store.update(PODS + "a", threading.current_thread().name.encode(),
                                                              expected_revision=start.mod_revision))
        assert len(won) == 1 and len(lost) == 7
        assert all(isinstance(e, Conflict) and e.current == won[0] for e in lost)
        assert store.get(PODS + "a") == won[0]
        start = won[0]


def test_racing_creates_and_deletes_exactly_one_wins(store: Storage) -> None:
    won, lost = _race(8, lambda: store.create(PODS + "a", b"x"))
    assert len(won) == 1 and len(lost) == 7 and all(isinstance(e, KeyExists) for e in lost)
    won, lost = _race(8, lambda: store.delete(PODS + "a", expected_revision=won[0].mod_revision))
    assert len(won) == 1 and len(lost) == 7 and all(isinstance(e, KeyNotFound) for e in lost)


# -- scale ------------------------------------------------------------------------------------------------


def _seed(store: Storage, keys: list[str], value: bytes, request: pytest.FixtureRequest) -> None:
    """Write `keys`: through `create` on SQLite; on etcd in txns of 100 puts (10,000 round trips of
    its fsync'd writes would dominate the suite's time)."""
    if "etcd" not in request.node.callspec.id:
        for key in keys:
            store.create(key, value)
        return
    endpoint = request.getfixturevalue("etcd_endpoint")
    b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
    for i in range(0, len(keys), 100):
        puts = [{"request_put": {"key": b64(k.encode()), "value": b64(value)}} for k in keys[i:i + 100]]
        requests.post(f"{endpoint}/v3/kv/txn", json={"success": puts}, timeout=30).raise_for_status()


def test_list_of_10k_keys(store: Storage, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture) -> None:
    value = b'{"kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[' + b'{"image":"busybox"},' * 40 + b"{}]}}"
    started = time.perf_counter()
    creates = 300
    for i in range(creates):
        store.create(f"/registry/configmaps/c{i}", value)
    create_rate = creates / (time.perf_counter() - started)
    keys = [f"{PODS}ns{i % 10}/pod-{i:05d}" for i in range(10_000)]
    _seed(store, keys, value, request)
    started = time.perf_counter()
    for key in keys[:500]:
        store.get(key)
    get_ms = (time.perf_counter() - started) / 500 * 1000
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        result = store.list(PODS)
        timings.append((time.perf_counter() - started) * 1000)
        assert len(result.records) == 10_000 and result.records[0].key == keys[0]
    started = time.perf_counter()
    page = store.list(PODS, limit=500)
    page_ms = (time.perf_counter() - started) * 1000
    assert len(page.records) == 500 and page.more
    with capsys.disabled():
        print(f"\n[storage bench {request.node.callspec.id}] create {create_rate:.0f}/s, get {get_ms:.2f} ms, "
              f"list 10k {min(timings):.1f} ms (best of 3; {len(value)} B values), list limit=500 {page_ms:.1f} ms")
    if "sqlite" in request.node.callspec.id:
        assert min(timings) < 100
