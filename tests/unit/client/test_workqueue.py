"""The work queue's guarantees (FIFO; many adds before processing → processed once; never two
workers on one item; re-add while processing → processed again after done; shutdown wakes every getter),
under real threads and against a model (hypothesis state machine); delays on a fake clock; the rate-limited
queue and the controller worker loop (upstream: client-go util/workqueue queue.go, delaying_queue.go,
rate_limiting_queue.go)."""

from __future__ import annotations

import contextlib
import logging
import queue as stdqueue
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from control.client.errors import Conflict
from control.client.ratelimit import ItemExponentialFailureRateLimiter
from control.client.workqueue import (
    DelayingQueue,
    QueueShutDown,
    RateLimitingQueue,
    WorkQueue,
    run_workers,
)
from tests.support.fake_clock import FakeClock

JOIN = 10.0  # real seconds a thread may take; only ever reached when something is broken


def drain_now(q: WorkQueue[str]) -> list[str]:
    """Everything queued right now, marked done as it is taken."""
    out = []
    while True:
        try:
            item = q.get(timeout=0)
        except (stdqueue.Empty, QueueShutDown):
            return out
        out.append(item)
        q.done(item)


# --- single-threaded guarantees ---------------------------------------------------------------------------

def test_fifo_order():
    q: WorkQueue[str] = WorkQueue()
    for item in "dacb":
        q.add(item)
    assert len(q) == 4
    assert drain_now(q) == list("dacb")


def test_added_many_times_before_processing_is_processed_once():
    q: WorkQueue[str] = WorkQueue()
    for item in "abacaab":
        q.add(item)
    assert len(q) == 3
    assert drain_now(q) == ["a", "b", "c"]


def test_item_being_processed_is_not_handed_out_again_until_done():
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    assert q.get() == "a"
    q.add("a")
    q.add("a")
    assert len(q) == 0
    with pytest.raises(stdqueue.Empty):
        q.get(timeout=0.01)
    q.add("b")
    assert q.get(timeout=0) == "b"
    q.done("a")  # re-added while processing: back in the queue, once, behind what is there
    q.add("c")
    assert len(q) == 2
    assert q.get(timeout=0) == "a"
    q.done("a")
    q.done("b")
    assert drain_now(q) == ["c"]


def test_done_without_dirty_readd_does_not_requeue():
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.done(q.get())
    assert len(q) == 0


def test_done_for_an_item_not_being_processed_is_an_error():
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    with pytest.raises(ValueError):
        q.done("a")
    q.done(q.get())
    with pytest.raises(ValueError):
        q.done("a")


def test_shut_down_ignores_adds_and_hands_out_what_is_left():
    q: WorkQueue[str] = WorkQueue(name="t")
    q.add("a")
    q.add("b")
    assert q.get() == "a"
    q.add("a")  # dirty while processing
    q.shut_down()
    assert q.shutting_down()
    q.add("c")
    assert q.get(timeout=0) == "b"
    q.done("b")
    q.done("a")  # re-added before the shutdown: still processed
    assert q.get(timeout=0) == "a"
    q.done("a")
    with pytest.raises(QueueShutDown):
        q.get()
    with pytest.raises(QueueShutDown):
        q.get(timeout=0)


# --- threads ----------------------------------------------------------------------------------------------

def test_concurrent_producers_and_eight_workers():
    """8 workers, 4 producers adding 50 keys 2000 times: no key is ever processed by two workers at once,
    and every add is followed by a processing that started after it (nothing lost)."""
    q: WorkQueue[str] = WorkQueue()
    keys = [f"k{i}" for i in range(50)]
    lock = threading.Lock()
    version: Counter[str] = Counter()  # bumped just before each add
    seen: dict[str, int] = {}  # the version a processing of the key saw when it started
    in_flight: set[str] = set()
    overlaps: list[str] = []
    processed = Counter()

    def produce(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(500):
            key = rng.choice(keys)
            with lock:
                version[key] += 1
            q.add(key)

    def work() -> None:
        while True:
            try:
                key = q.get()
            except QueueShutDown:
                return
            with lock:
                if key in in_flight:
                    overlaps.append(key)
                in_flight.add(key)
                seen[key] = version[key]
                processed[key] += 1
            threading.Event().wait(0.0001 if processed[key] % 7 == 0 else 0)  # let others interleave
            with lock:
                in_flight.discard(key)
            q.done(key)

    workers = [threading.Thread(target=work) for _ in range(8)]
    producers = [threading.Thread(target=produce, args=(seed,)) for seed in range(4)]
    for t in workers + producers:
        t.start()
    for t in producers:
        t.join(JOIN)
    assert q.shut_down_with_drain(timeout=JOIN)
    for t in workers:
        t.join(JOIN)
        assert not t.is_alive()
    assert overlaps == []
    assert seen == dict(version)  # every key's last processing saw its last add
    assert sum(processed.values()) <= 2000


def test_shut_down_wakes_every_blocked_getter():
    q: WorkQueue[str] = WorkQueue()
    results: list[BaseException] = []
    started = threading.Barrier(9)

    def getter() -> None:
        started.wait(JOIN)
        try:
            q.get()
        except QueueShutDown as e:
            results.append(e)

    threads = [threading.Thread(target=getter) for _ in range(8)]
    for t in threads:
        t.start()
    started.wait(JOIN)
    threading.Event().wait(0.05)  # most likely all blocked in get by now; the test holds either way
    q.shut_down()
    for t in threads:
        t.join(JOIN)
        assert not t.is_alive()
    assert len(results) == 8


def test_shut_down_with_drain_waits_for_done():
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("b")
    item = q.get()
    finished = threading.Event()

    def drain() -> None:
        assert q.shut_down_with_drain(timeout=JOIN)
        finished.set()

    t = threading.Thread(target=drain)
    t.start()
    assert not finished.wait(0.05)
    q.done(item)  # "b" is still queued: not drained yet
    assert not finished.wait(0.05)
    q.done(q.get())
    assert finished.wait(JOIN)
    t.join(JOIN)


def test_shut_down_cancels_a_drain_and_drain_times_out():
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.get()
    assert q.shut_down_with_drain(timeout=0.01) is False
    outcome: list[bool] = []
    t = threading.Thread(target=lambda: outcome.append(q.shut_down_with_drain()))
    t.start()
    threading.Event().wait(0.02)
    q.shut_down()
    t.join(JOIN)
    assert outcome == [False]


def test_drain_of_an_idle_queue_returns_at_once():
    assert WorkQueue().shut_down_with_drain(timeout=JOIN)


# --- model-based ------------------------------------------------------------------------------------------

ITEMS = st.sampled_from("abcde")


class QueueMachine(RuleBasedStateMachine):
    """The queue against a differently-shaped model: an ordered list of pending items, the set being
    processed, and the set re-added while processing."""

    def __init__(self) -> None:
        super().__init__()
        self.q: WorkQueue[str] = WorkQueue()
        self.pending: list[str] = []
        self.processing: set[str] = set()
        self.redo: set[str] = set()
        self.shut = False

    @rule(item=ITEMS)
    def add(self, item: str) -> None:
        self.q.add(item)
        if self.shut:
            return
        if item in self.processing:
            self.redo.add(item)
        elif item not in self.pending:
            self.pending.append(item)

    @rule()
    def get(self) -> None:
        if self.pending:
            expected = self.pending.pop(0)
            assert self.q.get(timeout=0) == expected
            self.processing.add(expected)
        elif self.shut:
            with pytest.raises(QueueShutDown):
                self.q.get(timeout=0)
        else:
            with pytest.raises(stdqueue.Empty):
                self.q.get(timeout=0)

    @precondition(lambda self: self.processing)
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        item = data.draw(st.sampled_from(sorted(self.processing)))
        self.q.done(item)
        self.processing.remove(item)
        if item in self.redo:
            self.redo.remove(item)
            self.pending.append(item)

    @rule(item=ITEMS)
    def done_unknown(self, item: str) -> None:
        if item not in self.processing:
            with pytest.raises(ValueError):
                self.q.done(item)

    @rule()
    def shut_down(self) -> None:
        self.q.shut_down()
        self.shut = True

    @invariant()
    def same_length(self) -> None:
        assert len(self.q) == len(self.pending)
        assert self.q.shutting_down() == self.shut


TestQueueModel = QueueMachine.TestCase
TestQueueModel.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


# --- delays -----------------------------------------------------------------------------------------------

@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def delaying(clock: FakeClock):
    q: DelayingQueue[str] = DelayingQueue(name="d", clock=clock)
    yield q
    q.shut_down()


def test_add_after_adds_when_due(delaying: DelayingQueue[str], clock: FakeClock):
    delaying.add_after("a", 10)
    delaying.add_after("b", 5)
    clock.advance(4.9)
    assert len(delaying) == 0
    clock.advance(0.1)
    assert drain_now(delaying) == ["b"]
    clock.advance(4.9)
    assert len(delaying) == 0
    clock.advance(0.2)
    assert drain_now(delaying) == ["a"]


def test_due_items_enter_in_ready_time_order(delaying: DelayingQueue[str], clock: FakeClock):
    for item, delay in [("a", 10), ("b", 5), ("c", 7), ("d", 5)]:
        delaying.add_after(item, delay)
    clock.advance(100)
    assert drain_now(delaying) == ["b", "d", "c", "a"]


def test_an_item_waiting_twice_keeps_the_sooner_time(delaying: DelayingQueue[str], clock: FakeClock):
    delaying.add_after("a", 10)
    delaying.add_after("a", 3)
    delaying.add_after("a", 20)
    clock.advance(3)
    assert drain_now(delaying) == ["a"]
    clock.advance(30)
    assert len(delaying) == 0  # the superseded entries add nothing


def test_add_after_with_no_delay_adds_at_once(delaying: DelayingQueue[str]):
    delaying.add_after("a", 0)
    delaying.add_after("b", -1)
    assert drain_now(delaying) == ["a", "b"]


def test_delayed_add_of_an_item_being_processed_is_processed_after_done(delaying: DelayingQueue[str],
                                                                        clock: FakeClock):
    delaying.add("a")
    item = delaying.get()
    delaying.add_after("a", 1)  # as a worker's add_rate_limited before done
    clock.advance(1)
    assert len(delaying) == 0
    delaying.done(item)
    assert drain_now(delaying) == ["a"]


def test_add_after_is_ignored_once_shut_down(clock: FakeClock):
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 1)
    q.shut_down()
    q.add_after("b", 0)
    q.add_after("c", 1)
    with pytest.raises(QueueShutDown):
        q.get(timeout=0)


def test_shut_down_ends_the_waiting_thread(clock: FakeClock):
    q: DelayingQueue[str] = DelayingQueue(name="ends", clock=clock)
    q.add_after("a", 1)
    waiter = next(t for t in threading.enumerate() if t.name == "workqueue-ends-delay")
    q.shut_down()
    waiter.join(JOIN)
    assert not waiter.is_alive()


def test_add_after_on_the_real_clock():
    q: DelayingQueue[str] = DelayingQueue()
    try:
        q.add_after("a", 0.01)
        q.add_after("b", 600)
        assert q.get(timeout=JOIN) == "a"
        assert len(q) == 0
    finally:
        q.shut_down()


# --- rate limiting and the worker loop --------------------------------------------------------------------

def test_add_rate_limited_backs_off_and_forget_resets(clock: FakeClock):
    q: RateLimitingQueue[str] = RateLimitingQueue(clock=clock)  # the controller default, on the fake clock
    try:
        q.add_rate_limited("a")
        clock.advance(0.004)
        assert len(q) == 0
        clock.advance(0.001)
        assert drain_now(q) == ["a"]
        q.add_rate_limited("a")  # second failure: 10 ms
        clock.advance(0.009)
        assert len(q) == 0
        clock.advance(0.001)
        assert drain_now(q) == ["a"]
        assert q.num_requeues("a") == 2
        q.forget("a")
        assert q.num_requeues("a") == 0
    finally:
        q.shut_down()


def fast_queue(name: str) -> RateLimitingQueue[str]:
    return RateLimitingQueue(ItemExponentialFailureRateLimiter(base_delay=0.001, max_delay=0.01), name=name)


@contextlib.contextmanager
def running(q: RateLimitingQueue[str], process: Callable[[str], None], **kwargs) -> Iterator[None]:
    """run_workers on a thread for the body; stopped (and checked to return) when the body ends."""
    stop = threading.Event()
    runner = threading.Thread(target=run_workers, args=(q, process), kwargs=dict(stop=stop, **kwargs),
                              daemon=True)
    runner.start()
    try:
        yield
    finally:
        stop.set()
        runner.join(JOIN)
    assert not runner.is_alive()
    assert q.shutting_down()


def test_run_workers_retries_failures_then_forgets(caplog):
    q = fast_queue("retry")
    calls: Counter[str] = Counter()
    succeeded = threading.Event()
    requeues_at_success: list[int] = []

    def process(item: str) -> None:
        calls[item] += 1
        if item == "flaky" and calls[item] <= 2:
            raise RuntimeError("boom")
        if item == "flaky":
            requeues_at_success.append(q.num_requeues(item))
            succeeded.set()

    with caplog.at_level(logging.ERROR, logger="control.client.workqueue"), running(q, process, workers=3):
        q.add("flaky")
        q.add("fine")
        assert succeeded.wait(JOIN)
    assert calls == {"flaky": 3, "fine": 1}
    assert requeues_at_success == [2]
    assert q.num_requeues("flaky") == 0  # forgotten after the success
    assert [r.getMessage() for r in caplog.records] == [
        "retry: processing 'flaky' failed (retry 1): boom", "retry: processing 'flaky' failed (retry 2): boom"]
    assert all(r.exc_info for r in caplog.records)  # an unexpected exception is a bug: keep its traceback


def test_run_workers_logs_api_errors_in_one_line_at_info(caplog):
    """A 409 from a stale cache is routine for a controller: retried, logged at info without a traceback."""
    q = fast_queue("conflict")
    calls: Counter[str] = Counter()
    succeeded = threading.Event()

    def process(item: str) -> None:
        calls[item] += 1
        if calls[item] == 1:
            raise Conflict(409, "Conflict", "the object has been modified")
        succeeded.set()

    with caplog.at_level(logging.INFO, logger="control.client.workqueue"), running(q, process, workers=1):
        q.add("ep")
        assert succeeded.wait(JOIN)
    assert [(r.levelno, r.getMessage(), bool(r.exc_info)) for r in caplog.records] == [
        (logging.INFO, "conflict: processing 'ep' failed (retry 1): 409 Conflict: the object has been modified",
         False)]


def test_run_workers_drops_an_item_after_max_retries(caplog):
    q = fast_queue("drop")
    calls: list[str] = []
    dropped = threading.Event()

    def process(item: str) -> None:
        calls.append(item)
        raise ValueError("always")

    class DropWatch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "dropping" in record.getMessage():
                dropped.set()

    watch = DropWatch()
    logging.getLogger("control.client.workqueue").addHandler(watch)
    try:
        with running(q, process, workers=2, max_retries=3):
            q.add("bad")
            assert dropped.wait(JOIN)
    finally:
        logging.getLogger("control.client.workqueue").removeHandler(watch)
    assert calls == ["bad"] * 4  # the first try and three retries
    assert q.num_requeues("bad") == 0


def test_run_workers_never_runs_one_item_twice_at_once():
    """8 workers; 20 keys added 10 times each while they run; every key's first try fails (a rate-limited
    re-add). No key runs on two workers at once, and every key eventually succeeds."""
    q = fast_queue("exclusive")
    lock = threading.Lock()
    in_flight: set[str] = set()
    overlaps: list[str] = []
    tries: Counter[str] = Counter()
    succeeded: set[str] = set()
    keys = [f"k{i}" for i in range(20)]
    all_succeeded = threading.Event()

    def process(key: str) -> None:
        with lock:
            if key in in_flight:
                overlaps.append(key)
            in_flight.add(key)
            tries[key] += 1
            first = tries[key] == 1
        threading.Event().wait(0.0005)
        with lock:
            in_flight.discard(key)
            if not first:
                succeeded.add(key)
                if len(succeeded) == len(keys):
                    all_succeeded.set()
        if first:
            raise RuntimeError("requeue me")

    with running(q, process, workers=8):
        rng = random.Random(4)
        for key in rng.sample(keys * 10, len(keys) * 10):
            q.add(key)
        assert all_succeeded.wait(JOIN)
    assert overlaps == []


def test_run_workers_stops_idle_workers():
    q = fast_queue("idle")
    with running(q, lambda item: None, workers=4):
        pass
    assert not any(t.name.startswith("idle-worker-") for t in threading.enumerate())


def test_run_workers_needs_a_worker():
    with pytest.raises(ValueError):
        run_workers(fast_queue("none"), lambda item: None, workers=0, stop=threading.Event())
