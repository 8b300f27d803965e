"""What only the SQLite backend promises: the log-table invariants, restarts, crash durability, the
compactor, and watches fed by writes from another instance. The shared contract is in
tests/integration/storage/test_storage_contract.py.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from control.storage.interface import (
    Compacted,
    Conflict,
    EventType,
    KeyExists,
    KeyNotFound,
    StorageError,
    Unavailable,
)
from control.storage.sqlite import SQLiteStorage, _Row, plan_create, plan_delete, plan_update, prefix_end

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "state.db")


@pytest.fixture
def opened(path: str) -> Iterator[Callable[..., SQLiteStorage]]:
    """Open stores on `path`; all closed at teardown."""
    stores: list[SQLiteStorage] = []

    def open_(**kwargs: float) -> SQLiteStorage:
        stores.append(SQLiteStorage(path, **kwargs))
        return stores[-1]

    yield open_
    for store in stores:
        store.close()


def rows(path: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT id, name, created, deleted, prev_revision FROM kine ORDER BY id").fetchall()


# -- pure decisions ---------------------------------------------------------------------------------------

LIVE = _Row(5, "k", 0, 0, 3, 3, b"v", b"u")
GONE = _Row(6, "k", 0, 1, 3, 5, b"v", b"v")


@pytest.mark.parametrize(
    "plan, latest, expected",
    [
        pytest.param(lambda latest: plan_create("k", b"n", latest, 9), None, _Row(9, "k", 1, 0, 9, 0, b"n", None),
                     id="create-new"),
        pytest.param(lambda latest: plan_create("k", b"n", latest, 9), GONE, _Row(9, "k", 1, 0, 9, 6, b"n", None),
                     id="create-after-delete-supersedes-tombstone"),
        pytest.param(lambda latest: plan_create("k", b"n", latest, 9), LIVE, KeyExists, id="create-existing"),
        pytest.param(lambda latest: plan_update("k", b"n", 5, latest, 9), LIVE, _Row(9, "k", 0, 0, 3, 5, b"n", b"v"),
                     id="update"),
        pytest.param(lambda latest: plan_update("k", b"n", 4, latest, 9), LIVE, Conflict, id="update-stale"),
        pytest.param(lambda latest: plan_update("k", b"n", 6, latest, 9), GONE, KeyNotFound, id="update-deleted"),
        pytest.param(lambda latest: plan_delete("k", None, latest, 9), LIVE, _Row(9, "k", 0, 1, 3, 5, b"v", b"v"),
                     id="delete"),
        pytest.param(lambda latest: plan_delete("k", 4, latest, 9), LIVE, Conflict, id="delete-stale"),
        pytest.param(lambda latest: plan_delete("k", None, latest, 9), None, KeyNotFound, id="delete-missing"),
    ],
)
def test_plans(plan: Callable, latest: _Row | None, expected: object) -> None:
    if isinstance(expected, _Row):
        assert plan(latest) == expected
    else:
        with pytest.raises(expected):
            plan(latest)


@pytest.mark.parametrize(
    "prefix, end",
    [("/registry/pods/", "/registry/pods0"), ("a", "b"), ("", None), ("x\U0010ffff", "y"), ("\ud7ff", "\ue000")],
)
def test_prefix_end(prefix: str, end: str | None) -> None:
    assert prefix_end(prefix) == end


# -- the log table ----------------------------------------------------------------------------------------


def test_writes_are_rows_and_deletes_are_rows(opened: Callable, path: str) -> None:
    store = opened()
    a = store.create("/a", b"1")
    store.update("/a", b"2", expected_revision=a.mod_revision)
    store.delete("/a")
    store.create("/a", b"3")
    # (id, name, created, deleted, prev_revision): each row names the row it supersedes.
    assert rows(path) == [(1, "/a", 1, 0, 0), (2, "/a", 0, 0, 1), (3, "/a", 0, 1, 2), (4, "/a", 1, 0, 3)]


def test_unique_name_prev_revision_rejects_a_forged_concurrent_write(opened: Callable, path: str) -> None:
    store = opened()
    a = store.create("/a", b"1")
    store.update("/a", b"mine", expected_revision=a.mod_revision)
    forged = ("INSERT INTO kine (name, created, deleted, create_revision, prev_revision, value)"
              " VALUES (?, ?, 0, ?, ?, ?)")
    with sqlite3.connect(path) as conn:
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
            conn.execute(forged, ("/a", 0, 1, a.mod_revision, b"theirs"))  # a second successor of revision 1
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
            conn.execute(forged, ("/a", 1, 9, 0, b"theirs"))  # a second creation from nothing
    assert store.get("/a").value == b"mine"


def test_a_row_already_superseding_the_expected_revision_blocks_the_write(opened: Callable, path: str) -> None:
    """A successor of revision 1 hidden below it (as a racing writer that bypassed the lock would leave)
    makes the store refuse, not append a second successor."""
    store = opened()
    a = store.create("/a", b"1")
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO kine VALUES (-1, '/a', 0, 0, 1, ?, X'', NULL)", (a.mod_revision,))
    with pytest.raises(StorageError, match="conflicting row"):
        store.update("/a", b"2", expected_revision=a.mod_revision)
    assert store.get("/a") == a
    assert store.revision() == a.mod_revision


def test_two_instances_on_one_file_cannot_both_win(opened: Callable) -> None:
    one, two = opened(), opened()
    a = one.create("/a", b"1")
    two.update("/a", b"two", expected_revision=a.mod_revision)
    with pytest.raises(Conflict) as caught:
        one.update("/a", b"one", expected_revision=a.mod_revision)
    assert caught.value.current.value == b"two"


# -- restarts and crashes ---------------------------------------------------------------------------------


def test_restart_keeps_data_and_revision_keeps_increasing(opened: Callable, path: str) -> None:
    store = opened()
    a = store.create("/a", b"1")
    a = store.update("/a", b"2", expected_revision=a.mod_revision)
    store.create("/b", b"1")
    gone = store.delete("/b")
    store.close()
    again = opened()
    assert again.get("/a") == a
    assert again.get("/b") is None
    assert again.revision() == gone.mod_revision
    assert again.create("/c", b"1").mod_revision == gone.mod_revision + 1


def test_revision_survives_compacting_away_the_newest_rows(opened: Callable, path: str) -> None:
    """The newest rows being a delete and its predecessor, compaction removes them all; AUTOINCREMENT's
    high-water mark keeps the revision from going back, across a restart too."""
    store = opened()
    store.create("/a", b"1")
    gone = store.delete("/a")
    store.compact(gone.mod_revision)
    assert rows(path) == []
    store.close()
    again = opened()
    assert again.revision() == gone.mod_revision
    assert again.compact_revision() == gone.mod_revision
    assert again.create("/a", b"2").mod_revision == gone.mod_revision + 1


WRITER = textwrap.dedent(
    """
    import sys
    from control.storage.sqlite import SQLiteStorage
    store = SQLiteStorage(sys.argv[1])
    i = 0
    while True:
        key = f"/registry/acked/{i:06d}"
        store.create(key, b"x" * 200)
        print(key, flush=True)  # printed only after create returned: acknowledged
        i += 1
    """
)


# Eight threads writing at once: their writes share group commits, and each is printed only once its own
# call returned.
GROUP_WRITER = textwrap.dedent(
    """
    import sys, threading
    from control.storage.sqlite import SQLiteStorage
    store = SQLiteStorage(sys.argv[1])
    printing = threading.Lock()
    def write(worker):
        i = 0
        while True:
            key = f"/registry/acked/{worker}-{i:06d}"
            store.create(key, b"x" * 200)
            with printing:
                print(key, flush=True)
            i += 1
    for worker in range(8):
        threading.Thread(target=write, args=(worker,)).start()
    """
)


@pytest.mark.parametrize("writer, in_flight", [pytest.param(WRITER, 1, id="one-writer"),
                                               pytest.param(GROUP_WRITER, 8, id="group-commits")])
def test_acknowledged_writes_survive_kill_9(opened: Callable, path: str, writer: str, in_flight: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", writer, path], stdout=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    acked: list[str] = []
    try:
        while len(acked) < 300:
            line = proc.stdout.readline()
            assert line, f"writer exited early with {proc.wait()}"
            acked.append(line.strip())
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        # Lines printed before the kill; a line cut short by it was not acknowledged.
        acked.extend(line.strip() for line in proc.stdout if line.endswith("\n"))
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    store = opened()
    present = {r.key for r in store.list("/registry/acked/").records}
    assert set(acked) <= present
    assert len(present) - len(acked) <= in_flight  # at most the writes in flight committed without their print
    assert store.revision() == len(present)


# -- group commit ---------------------------------------------------------------------------------------


def queue_writes(store: SQLiteStorage, writes: list[Callable[[], object]]) -> list[threading.Thread]:
    """Start `writes` one thread each, the next only once the previous one is queued, so they queue in
    list order; results[i] is write i's record or exception."""
    threads = []
    for write in writes:
        queued = len(store._pending)
        thread = threading.Thread(target=write)
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 5
        while len(store._pending) == queued and time.monotonic() < deadline:
            time.sleep(0.001)
        assert len(store._pending) == queued + 1
    return threads


def run(results: list, index: int, call: Callable[[], object]) -> Callable[[], None]:
    def target() -> None:
        try:
            results[index] = call()
        except StorageError as exc:
            results[index] = exc
    return target


def test_writes_queued_behind_a_commit_share_the_next_one_and_keep_their_semantics(opened: Callable,
                                                                                   path: str) -> None:
    """Each write of a group commit is planned on what the writes before it in the batch left, gets its
    own revision, and fails alone."""
    store = opened()
    a = store.create("/a", b"1")  # 1
    store.create("/c", b"1")      # 2
    commits: list[str] = []
    store._writer.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    results: list = [None] * 7
    store._write_lock.acquire()  # the first writer leads and waits here; the others queue behind it
    try:
        leader = threading.Thread(target=run(results, 0, lambda: store.create("/x", b"1")))
        leader.start()
        while not store._committing:
            time.sleep(0.001)
        threads = queue_writes(store, [
            run(results, 1, lambda: store.update("/a", b"2", expected_revision=a.mod_revision)),
            run(results, 2, lambda: store.update("/a", b"3", expected_revision=a.mod_revision)),
            run(results, 3, lambda: store.create("/b", b"1")),
            run(results, 4, lambda: store.create("/b", b"2")),
            run(results, 5, lambda: store.delete("/missing")),
            run(results, 6, lambda: store.delete("/c", expected_revision=2)),
        ])
    finally:
        store._write_lock.release()
    for thread in [leader, *threads]:
        thread.join(10)
    assert [r.mod_revision for r in (results[0], results[1], results[3], results[6])] == [3, 4, 5, 6]
    assert isinstance(results[2], Conflict) and results[2].current.value == b"2"  # saw write 1 of its batch
    assert isinstance(results[4], KeyExists)
    assert isinstance(results[5], KeyNotFound)
    assert commits == ["COMMIT", "COMMIT"]  # the leader's own write, then the six queued behind it at once
    assert rows(path)[2:] == [(3, "/x", 1, 0, 0), (4, "/a", 0, 0, 1), (5, "/b", 1, 0, 0), (6, "/c", 0, 1, 2)]
    watch, seen = store.watch("/", after=2), []
    deadline = time.monotonic() + 5
    while len(seen) < 4 and time.monotonic() < deadline:  # history and live events may come in two batches
        seen += [(e.key, e.revision) for e in watch.next(0.1)]
    assert seen == [("/x", 3), ("/a", 4), ("/b", 5), ("/c", 6)]


class FailingCommit:
    """The writer connection, except that COMMIT fails as a full disk would."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_a_failed_commit_fails_every_write_of_its_batch(opened: Callable, path: str) -> None:
    store = opened()
    real = store._writer
    results: list = [None] * 3
    store._write_lock.acquire()
    try:
        leader = threading.Thread(target=run(results, 0, lambda: store.create("/x", b"1")))
        leader.start()
        while not store._committing:
            time.sleep(0.001)
        threads = queue_writes(store, [run(results, 1, lambda: store.create("/a", b"1")),
                                       run(results, 2, lambda: store.create("/b", b"1"))])
        store._writer = FailingCommit(real)
    finally:
        store._write_lock.release()
    for thread in [leader, *threads]:
        thread.join(10)
    assert all(isinstance(r, Unavailable) for r in results)
    assert not real.in_transaction
    assert rows(path) == []
    store._writer = real
    assert store.create("/a", b"1").mod_revision == 1


def test_a_plan_that_raises_fails_alone_and_the_batch_commits(opened: Callable, path: str) -> None:
    """An unexpected error in one write's plan is that write's error; its batch-mates still commit (and
    only a commit that happened is reported as one)."""
    store = opened()
    results: list = [None] * 4

    def broken(latest: object, revision: int) -> object:
        raise ValueError("a plan that fails")

    def capture(index: int, call: Callable[[], object]) -> Callable[[], None]:
        def target() -> None:
            try:
                results[index] = call()
            except Exception as exc:  # noqa: BLE001 - the plan's error is the result
                results[index] = exc
        return target

    store._write_lock.acquire()
    try:
        leader = threading.Thread(target=capture(0, lambda: store.create("/x", b"1")))
        leader.start()
        while not store._committing:
            time.sleep(0.001)
        threads = queue_writes(store, [capture(1, lambda: store.create("/a", b"1")),
                                       capture(2, lambda: store._append("/bad", broken)),
                                       capture(3, lambda: store.create("/b", b"1"))])
    finally:
        store._write_lock.release()
    for thread in [leader, *threads]:
        thread.join(10)
    assert isinstance(results[2], ValueError)
    assert [r.mod_revision for r in (results[0], results[1], results[3])] == [1, 2, 3]
    assert [r[1] for r in rows(path)] == ["/x", "/a", "/b"]


# -- compaction -------------------------------------------------------------------------------------------


def test_compact_keeps_the_state_at_its_revision(opened: Callable, path: str) -> None:
    store = opened()
    a = store.create("/a", b"1")                                    # 1
    a = store.update("/a", b"2", expected_revision=a.mod_revision)  # 2 supersedes 1
    store.create("/b", b"1")                                        # 3
    store.delete("/b")                                              # 4 deletes 3
    store.create("/c", b"1")                                        # 5
    store.update("/a", b"3", expected_revision=a.mod_revision)      # 6 supersedes 2, after the target
    store.compact(5)
    assert [r[0] for r in rows(path)] == [2, 5, 6]  # 1 superseded, 3 and its delete 4 gone; 2 still needed at 5
    assert [(r.key, r.value) for r in store.list("/", revision=5).records] == [("/a", b"2"), ("/c", b"1")]
    with pytest.raises(Compacted):
        store.list("/", revision=4)
    with pytest.raises(Compacted):
        store.watch("/", after=4)
    assert [e.type for e in store.watch("/", after=5).next(1)] == [EventType.MODIFIED]
    store.compact(3)  # already compacted further: nothing happens
    assert store.compact_revision() == 5
    with pytest.raises(ValueError):
        store.compact(store.revision() + 1)


def test_compactor_keeps_the_newest_revisions(opened: Callable, path: str) -> None:
    store = opened(compact_interval=0.05, compact_keep=5)
    record = store.create("/a", b"0")
    for i in range(1, 30):
        record = store.update("/a", str(i).encode(), expected_revision=record.mod_revision)
    deadline = time.monotonic() + 5
    while store.compact_revision() != 30 - 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.compact_revision() == 25
    assert [r[0] for r in rows(path)] == [25, 26, 27, 28, 29, 30]
    assert store.get("/a") == record
    assert [e.value for e in store.watch("/", after=25).next(1)] == [b"25", b"26", b"27", b"28", b"29"]


# -- watches ----------------------------------------------------------------------------------------------


def test_watch_sees_writes_of_another_instance_within_a_poll(opened: Callable) -> None:
    """Local writes wake the poller at once; another process's writes are found by the ~1 s poll."""
    reader, writer = opened(), opened()
    watch = reader.watch("/", after=reader.revision())
    writer.create("/a", b"1")
    started = time.monotonic()
    events = []
    while not events and time.monotonic() - started < 3:
        events = watch.next(0.1)
    assert [(e.type, e.key) for e in events] == [(EventType.ADDED, "/a")]
    assert time.monotonic() - started < 2


def test_watch_ends_when_another_instance_compacts_past_it(opened: Callable) -> None:
    reader, writer = opened(), opened()
    watch = reader.watch("/", after=reader.revision())
    reader._broadcaster._lock.acquire()  # hold the poller so the other instance's rows go unread
    try:
        a = writer.create("/a", b"1")
        writer.update("/a", b"2", expected_revision=a.mod_revision)
        writer.compact(writer.revision())
    finally:
        reader._broadcaster._lock.release()
    deadline = time.monotonic() + 3
    with pytest.raises(Compacted):
        while time.monotonic() < deadline:
            watch.next(0.1)


def test_close_ends_watches_and_refuses_calls(opened: Callable) -> None:
    store = opened()
    watch = store.watch("/", after=0)
    store.close()
    with pytest.raises(Unavailable):
        watch.next(1)
    with pytest.raises(Unavailable):
        store.get("/a")
    with pytest.raises(Unavailable):
        store.create("/a", b"1")
