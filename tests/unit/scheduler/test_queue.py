"""The scheduling queue (upstream backend/queue/scheduling_queue_test.go): priority order, backoff, moves on
cluster events, the 5-minute flush."""

from __future__ import annotations

import threading

import pytest

from control.scheduler.queue import ACTIVE, BACKOFF, UNSCHEDULABLE, SchedulingQueue, backoff_seconds
from tests.support.fake_clock import FakeClock
from tests.support.scheduler_objects import make_pod


def _pop_now(queue: SchedulingQueue):
    return queue.pop(timeout=0)


@pytest.mark.parametrize(("attempts", "seconds"), [(0, 0), (1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (9, 10)])
def test_backoff_doubles_from_one_second_up_to_ten(attempts, seconds) -> None:
    assert backoff_seconds(attempts) == seconds


def test_active_pods_pop_by_priority_then_arrival() -> None:
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock)
    queue.add(make_pod("low-early", priority=0))
    clock.step(1)
    queue.add(make_pod("high", priority=100))
    clock.step(1)
    queue.add(make_pod("low-late", priority=0))
    order = [_pop_now(queue).pod["metadata"]["name"] for _ in range(3)]
    assert order == ["high", "low-early", "low-late"]
    assert _pop_now(queue) is None


def test_unschedulable_pod_waits_for_an_event_then_its_backoff() -> None:
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock)
    pod = make_pod("p")
    queue.add(pod)
    info = _pop_now(queue)
    queue.add_unschedulable_if_not_present(info, queue.scheduling_cycle, unschedulable=True)
    assert queue.where(pod) == UNSCHEDULABLE
    clock.step(30)
    assert _pop_now(queue) is None  # time alone (under 5 min) does not retry it
    queue.move_all_to_active_or_backoff("NodeAdd")
    assert queue.where(pod) == ACTIVE  # its 1 s backoff ran out long ago
    info = _pop_now(queue)
    assert info.attempts == 2
    queue.add_unschedulable_if_not_present(info, queue.scheduling_cycle, unschedulable=True)
    queue.move_all_to_active_or_backoff("NodeUpdate")
    assert queue.where(pod) == BACKOFF  # failed just now, second attempt: 2 s
    clock.step(1.9)
    queue.flush_backoff_completed()
    assert queue.where(pod) == BACKOFF
    clock.step(0.1)
    assert _pop_now(queue).pod is pod


def test_a_move_request_during_the_cycle_sends_the_failed_pod_to_backoff() -> None:
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock)
    pod = make_pod("p")
    queue.add(pod)
    info = _pop_now(queue)
    cycle = queue.scheduling_cycle
    queue.move_all_to_active_or_backoff("NodeAdd")  # a node came while the cycle ran
    queue.add_unschedulable_if_not_present(info, cycle, unschedulable=True)
    assert queue.where(pod) == BACKOFF


def test_a_plugins_queueing_hint_picks_which_of_the_pods_it_rejected_move() -> None:
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock)
    wanted, other, running = make_pod("wanted"), make_pod("other"), make_pod("running")
    too_big = make_pod("too-big")
    for pod, plugin in ((wanted, "InterPodAffinity"), (other, "InterPodAffinity"), (too_big, "NodeResourcesFit")):
        queue.add(pod)
        queue.add_unschedulable_if_not_present(_pop_now(queue), queue.scheduling_cycle, unschedulable=True,
                                               plugins=frozenset({plugin}))
    queue.add(running)
    info = _pop_now(queue)
    cycle = queue.scheduling_cycle
    clock.step(5)
    queue.move_all_to_active_or_backoff("AssignedPodAdd", plugins=frozenset({"InterPodAffinity", "PodTopologySpread"}),
                                        hints={"InterPodAffinity": lambda pod: pod["metadata"]["name"] == "wanted"})
    assert (queue.where(wanted), queue.where(other), queue.where(too_big)) == (ACTIVE, UNSCHEDULABLE, UNSCHEDULABLE)
    queue.add_unschedulable_if_not_present(info, cycle, unschedulable=True)
    assert queue.where(running) == BACKOFF  # it failed while the event came: as with every move


def test_errors_go_to_backoff_not_unschedulable() -> None:
    queue = SchedulingQueue(clock=FakeClock())
    pod = make_pod("p")
    queue.add(pod)
    queue.add_unschedulable_if_not_present(_pop_now(queue), queue.scheduling_cycle, unschedulable=False)
    assert queue.where(pod) == BACKOFF


def test_unschedulable_pods_are_flushed_after_five_minutes() -> None:
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock)
    pod = make_pod("p")
    queue.add(pod)
    queue.add_unschedulable_if_not_present(_pop_now(queue), queue.scheduling_cycle, unschedulable=True)
    clock.step(300)
    queue.flush_unschedulable_left_over()
    assert queue.where(pod) == UNSCHEDULABLE
    clock.step(0.5)
    assert _pop_now(queue).pod is pod  # pop flushes as it waits


def test_the_flush_moves_exactly_the_pods_unschedulable_for_over_five_minutes() -> None:
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock)
    pods = [make_pod(f"p{i}") for i in range(6)]
    for pod in pods:  # unschedulable 10 s apart: p0 at 0 s ... p5 at 50 s
        queue.add(pod)
        queue.add_unschedulable_if_not_present(_pop_now(queue), queue.scheduling_cycle, unschedulable=True)
        clock.step(10)
    clock.step(265)  # now 325 s: p0, p1, p2 waited over 300 s, p3 295 s
    queue.flush_unschedulable_left_over()
    assert [queue.where(pod) == UNSCHEDULABLE for pod in pods] == [False] * 3 + [True] * 3
    clock.step(10)
    queue.flush_unschedulable_left_over()
    assert [queue.where(pod) == UNSCHEDULABLE for pod in pods] == [False] * 4 + [True] * 2


def test_an_update_of_spec_moves_an_unschedulable_pod_a_status_update_does_not() -> None:
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock)
    pod = make_pod("p")
    queue.add(pod)
    queue.add_unschedulable_if_not_present(_pop_now(queue), queue.scheduling_cycle, unschedulable=True)
    clock.step(5)
    status_only = {**pod, "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled"}]}}
    queue.update(pod, status_only)
    assert queue.where(pod) == UNSCHEDULABLE
    relabelled = {**status_only, "spec": {**pod["spec"], "nodeSelector": {"disk": "ssd"}}}
    queue.update(status_only, relabelled)
    assert queue.where(pod) == ACTIVE
    assert queue.pending() == {ACTIVE: 1, BACKOFF: 0, UNSCHEDULABLE: 0}


def test_delete_takes_a_pod_out_of_every_queue() -> None:
    queue = SchedulingQueue(clock=FakeClock())
    pod = make_pod("p")
    queue.add(pod)
    queue.delete(pod)
    assert queue.where(pod) is None and _pop_now(queue) is None


def test_pop_waits_for_an_add_and_close_ends_the_wait() -> None:
    queue = SchedulingQueue()
    got = []
    thread = threading.Thread(target=lambda: got.append(queue.pop()))
    thread.start()
    queue.add(make_pod("p"))
    thread.join(5)
    assert got and got[0].pod["metadata"]["name"] == "p"
    thread = threading.Thread(target=lambda: got.append(queue.pop()))
    thread.start()
    queue.close()
    thread.join(5)
    assert got[1] is None


def test_an_event_for_some_plugins_moves_only_the_pods_they_rejected() -> None:
    """Upstream EventsToRegister: an assigned pod's add moves what PodTopologySpread rejected, not what
    only NodeResourcesFit rejected; a pod no plugin rejected moves on any event."""
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock)
    spread, cpu, unknown = make_pod("spread"), make_pod("cpu"), make_pod("unknown")
    for pod, plugins in ((spread, {"NodeAffinity", "PodTopologySpread"}), (cpu, {"NodeResourcesFit"}),
                         (unknown, set())):
        queue.add(pod)
        info = _pop_now(queue)
        queue.add_unschedulable_if_not_present(info, queue.scheduling_cycle, unschedulable=True,
                                               plugins=frozenset(plugins))
    clock.step(30)
    queue.move_all_to_active_or_backoff("AssignedPodAdd", plugins=frozenset({"PodTopologySpread", "InterPodAffinity"}))
    assert (queue.where(spread), queue.where(cpu), queue.where(unknown)) == (ACTIVE, UNSCHEDULABLE, ACTIVE)
    queue.move_all_to_active_or_backoff("NodeAdd")
    assert queue.where(cpu) == ACTIVE
