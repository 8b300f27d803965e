"""PodWorkers: one sync at a time per pod, latest spec wins, wake/gone/retry, a finished pod's worker ends,
and a failing sync neither kills the worker nor the others."""

from __future__ import annotations

import itertools
import threading
import time

from nodeagent.pod_workers import PodWorkers, WorkItem, WorkResult
from tests.support.polling import wait_until

DONE_NOTHING = WorkResult()


class Recorder:
    def __init__(self, delay: float = 0.0, result: WorkResult = DONE_NOTHING) -> None:
        self.items: list[WorkItem] = []
        self.delay = delay
        self.result = result
        self.active: dict[str, int] = {}
        self.overlap = False
        self.lock = threading.Lock()

    def __call__(self, item: WorkItem) -> WorkResult:
        with self.lock:
            self.active[item.uid] = self.active.get(item.uid, 0) + 1
            self.overlap |= self.active[item.uid] > 1
            self.items.append(item)
        time.sleep(self.delay)
        with self.lock:
            self.active[item.uid] -= 1
        return self.result


def test_updates_during_a_sync_collapse_into_one_more_with_the_latest_spec() -> None:
    sync = Recorder(delay=0.2)
    workers = PodWorkers(sync, resync_period=60)
    try:
        workers.update("a", {"v": 1})
        assert wait_until(lambda: len(sync.items) == 1, timeout=3.0, interval=0.01)
        for v in (2, 3, 4):
            workers.update("a", {"v": v})
        assert wait_until(lambda: len(sync.items) == 2, timeout=3.0, interval=0.01)
        time.sleep(0.4)
        assert [i.pod for i in sync.items] == [{"v": 1}, {"v": 4}] and not sync.overlap
        assert sync.items[0].since == float("-inf") < sync.items[1].since
    finally:
        workers.stop()


def test_pods_are_synced_in_parallel_each_serialised() -> None:
    sync = Recorder(delay=0.3)
    workers = PodWorkers(sync, resync_period=60)
    try:
        started = time.monotonic()
        for uid in "abc":
            workers.update(uid, {"uid": uid})
        assert wait_until(lambda: len(sync.items) == 3, timeout=3.0, interval=0.01)
        assert time.monotonic() - started < 0.3  # not one after another
        for _ in range(5):
            workers.wake("a")
        time.sleep(0.8)
        assert not sync.overlap and workers.uids() == {"a", "b", "c"}
    finally:
        workers.stop()


def test_wake_only_for_known_pods_and_retry_after_resyncs() -> None:
    sync = Recorder(result=WorkResult(retry_after=0.1))
    workers = PodWorkers(sync, resync_period=60)
    try:
        assert workers.wake("nobody") is False
        workers.update("a", {})
        assert wait_until(lambda: len(sync.items) >= 4, timeout=3.0, interval=0.01)  # re-synced by its own timer
    finally:
        workers.stop()


def test_gone_pod_keeps_its_last_spec_and_the_worker_ends_when_done() -> None:
    sync = Recorder()
    workers = PodWorkers(sync, resync_period=60)
    try:
        workers.update("a", {"spec": 1})
        assert wait_until(lambda: len(sync.items) == 1, timeout=3.0, interval=0.01)
        sync.result = WorkResult(done=True)
        workers.gone("a")
        assert wait_until(lambda: workers.uids() == set(), timeout=3.0, interval=0.01)
        assert sync.items[-1].gone and sync.items[-1].pod == {"spec": 1}
        assert workers.pods() == []
    finally:
        workers.stop()


def test_a_failing_sync_is_retried_and_does_not_stop_the_worker() -> None:
    calls: list[str] = []

    def sync(item: WorkItem) -> WorkResult:
        calls.append(item.uid)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return WorkResult()

    workers = PodWorkers(sync, resync_period=60, error_retry=0.05)
    try:
        workers.update("a", {})
        assert wait_until(lambda: len(calls) == 2, timeout=3.0, interval=0.01)
    finally:
        workers.stop()


def test_a_sync_that_started_containers_requests_a_relist_after_taking_since() -> None:
    ticks = itertools.count()
    requests: list[int] = []

    def clock() -> int:
        return next(ticks)

    sync = Recorder(result=WorkResult(relist=True))
    workers = PodWorkers(sync, resync_period=60, clock=clock, request_relist=lambda: requests.append(clock()))
    try:
        workers.update("a", {})
        assert wait_until(lambda: len(requests) == 1, timeout=3.0, interval=0.01)
        sync.result = WorkResult()  # nothing started: no request
        workers.wake("a")
        assert wait_until(lambda: len(sync.items) == 2, timeout=3.0, interval=0.01)
        workers.wake("a")
        assert wait_until(lambda: len(sync.items) == 3, timeout=3.0, interval=0.01)
        time.sleep(0.1)
        assert len(requests) == 1
        # the relist was asked for after the time the next sync waits past was taken
        assert sync.items[1].since < requests[0]
    finally:
        workers.stop()
