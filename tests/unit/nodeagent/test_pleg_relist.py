"""GenericPLEG relisting a fake low-level Docker API through the real DockerRuntime: only containers whose
(id, State) changed are inspected, events per pod, the pod cache, retries and health."""

from __future__ import annotations

import threading
import time

import pytest

from nodeagent.pleg import EventType, GenericPLEG, PodLifecycleEvent
from nodeagent.runtime import labels as L
from nodeagent.runtime.docker import DockerRuntime
from nodeagent.runtime.types import ContainerState, SandboxState
from tests.support.cri_configs import container_docker_labels, sandbox_docker_labels
from tests.support.fake_docker import FakeDockerAPI
from tests.support.polling import wait_until

POD = {"metadata": {"name": "web", "namespace": "ns", "uid": "uid-1"}, "spec": {}}
COMPLETE = 30.0  # inspect_wait for tests that expect every relist to finish its inspects, however loaded the host


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def sandbox_labels(node: str = "n1", pod=POD) -> dict:
    return sandbox_docker_labels(pod, node=node, attempt=0)


def app_labels(name: str = "app", attempt: int = 0, policy: str = "File", pod=POD) -> dict:
    spec = {"name": name, "terminationMessagePolicy": policy}
    return container_docker_labels(pod, spec, node="n1", sandbox_id="sb", attempt=attempt, spec_hash="h")


@pytest.fixture
def api() -> FakeDockerAPI:
    return FakeDockerAPI()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def pleg(api, clock) -> GenericPLEG:
    ips = {"sb": "10.244.0.5"}
    runtime = DockerRuntime(api, node_name="n1", pod_ip=lambda sandbox: ips.get(sandbox.id, ""))
    return GenericPLEG(runtime, clock=clock, threshold=180, inspect_wait=COMPLETE)


def types(result) -> list[tuple[EventType, str]]:
    return [(e.type, e.container_id) for e in result.events]


def test_first_relist_inspects_everything_and_fills_the_cache(api, pleg):
    api.add("sb", sandbox_labels())
    api.add("c1", app_labels(), second=1)
    result = pleg.relist()
    assert sorted(types(result)) == [(EventType.CONTAINER_STARTED, "c1"), (EventType.CONTAINER_STARTED, "sb")]
    assert sorted(api.inspects) == ["c1", "sb"]
    status = pleg.cache.get("uid-1")
    assert (status.name, status.namespace, status.ips) == ("web", "ns", ("10.244.0.5",))
    assert status.sandboxes[0].state is SandboxState.READY
    assert [(c.id, c.name, c.state) for c in status.containers] == [("c1", "app", ContainerState.RUNNING)]


def test_unchanged_containers_are_not_inspected_again(api, pleg):
    api.add("sb", sandbox_labels())
    api.add("c1", app_labels())
    pleg.relist()
    api.inspects.clear()
    result = pleg.relist()
    assert (result.events, result.inspected, api.inspects) == ([], 0, [])


def test_a_death_inspects_only_that_container(api, pleg):
    api.add("sb", sandbox_labels())
    api.add("c1", app_labels(policy="FallbackToLogsOnError"))
    api.add("c2", app_labels("side"))
    pleg.relist()
    api.inspects.clear()
    api.items["c1"].update(state="exited", exit_code=2)
    result = pleg.relist()
    assert types(result) == [(EventType.CONTAINER_DIED, "c1")]
    assert api.inspects == ["c1"]
    c1 = pleg.cache.get("uid-1").latest("app")
    assert (c1.state, c1.exit_code, c1.reason, c1.message) == (ContainerState.EXITED, 2, "Error", "last words\n")


def test_removal_and_a_vanished_pod(api, pleg):
    api.add("sb", sandbox_labels())
    api.add("c1", app_labels(), state="exited", exit_code=0)
    pleg.relist()
    del api.items["c1"]
    assert types(pleg.relist()) == [(EventType.CONTAINER_REMOVED, "c1")]
    assert pleg.cache.get("uid-1").containers == ()
    del api.items["sb"]
    assert types(pleg.relist()) == [(EventType.CONTAINER_DIED, "sb"), (EventType.CONTAINER_REMOVED, "sb")]
    assert "uid-1" not in pleg.cache.uids()
    assert pleg.cache.get("uid-1").sandboxes == ()


def test_a_failed_inspection_is_retried_next_relist(api, pleg):
    api.add("sb", sandbox_labels())
    api.fail_inspect.add("sb")
    first = pleg.relist()
    assert (first.events, first.failed_pods) == ([], {"uid-1"})
    assert "uid-1" not in pleg.cache.uids()
    api.fail_inspect.clear()
    assert types(pleg.relist()) == [(EventType.CONTAINER_STARTED, "sb")]


def test_other_nodes_and_non_pod_containers_are_ignored(api, pleg):
    api.add("theirs", sandbox_labels(node="n2"))
    api.add("stray", {L.NODE: "n1"})
    assert (pleg.relist().events, api.inspects) == ([], [])


def test_a_pod_ip_assigned_later_updates_the_cache_without_events(api, clock):
    ips: dict[str, str] = {}
    pleg = GenericPLEG(DockerRuntime(api, node_name="n1", pod_ip=lambda s: ips.get(s.id, "")), clock=clock,
                       inspect_wait=COMPLETE)
    api.add("sb", sandbox_labels())
    pleg.relist()
    assert pleg.cache.get("uid-1").ips == ()
    ips["sb"] = "10.244.0.9"
    clock.now += 1
    assert pleg.relist().events == []
    assert pleg.cache.get("uid-1").ips == ("10.244.0.9",)


def test_health_follows_the_last_successful_relist(api, pleg, clock):
    assert pleg.healthy()[0] is False
    pleg.relist()
    assert pleg.healthy() == (True, "")
    api.fail_list = True
    clock.now += 181
    pleg.relist()
    healthy, why = pleg.healthy()
    assert not healthy and "threshold" in why


def test_get_newer_than_waits_for_a_later_relist(api, pleg, clock):
    api.add("sb", sandbox_labels())
    pleg.relist()
    acted = clock.now
    assert pleg.cache.get_newer_than("uid-1", acted, timeout=0.05) is None
    clock.now += 1
    threading.Timer(0.05, pleg.relist).start()
    status = pleg.cache.get_newer_than("uid-1", acted, timeout=5)
    assert status is not None and status.sandboxes[0].id == "sb"
    assert pleg.cache.get_newer_than("unknown-pod", acted, timeout=0).uid == "unknown-pod"


def test_a_full_event_queue_drops_instead_of_blocking(api, clock):
    pleg = GenericPLEG(DockerRuntime(api, node_name="n1"), clock=clock, capacity=1, inspect_wait=COMPLETE)
    other = {"metadata": {"name": "db", "namespace": "ns", "uid": "uid-2"}}
    api.add("sb", sandbox_labels())
    api.add("sb2", sandbox_labels(pod=other))
    pleg.relist()  # two pods with events, no dispatcher running: the second does not fit
    assert pleg.discarded == 1


def test_events_reach_the_callback_per_pod(api):
    got: list[tuple[str, tuple[PodLifecycleEvent, ...]]] = []
    delivered = threading.Event()

    def on_events(uid, events):
        got.append((uid, events))
        delivered.set()

    pleg = GenericPLEG(DockerRuntime(api, node_name="n1"), on_events=on_events, period=0.02)
    api.add("sb", sandbox_labels())
    api.add("c0", app_labels(), state="created")  # ContainerChanged: computed, not sent
    pleg.start()
    try:
        assert delivered.wait(5)
    finally:
        pleg.stop()
    assert got == [("uid-1", (PodLifecycleEvent("uid-1", EventType.CONTAINER_STARTED, "sb"),))]


class Lister:
    """A RelistSource with no containers that counts lists; `hold` makes the next list wait for `release`."""

    pod_ip = None

    def __init__(self) -> None:
        self.lists = 0
        self.hold = False
        self.holding = threading.Event()
        self.release = threading.Event()

    def list_containers(self) -> list[dict]:
        self.lists += 1
        if self.hold:
            self.hold = False
            self.holding.set()
            self.release.wait(5)
        return []

    def inspect_status(self, container_id, identity):
        raise AssertionError("nothing to inspect")


def test_request_relist_wakes_the_loop_before_the_period():
    source = Lister()
    pleg = GenericPLEG(source, period=30)
    pleg.start()
    try:
        assert wait_until(lambda: source.lists == 1, timeout=3.0, interval=0.005)
        time.sleep(0.2)
        assert source.lists == 1  # the period alone would wait 30 s
        started = time.monotonic()
        pleg.request_relist()
        assert wait_until(lambda: source.lists == 2, timeout=2, interval=0.005)
        assert time.monotonic() - started < 1
        time.sleep(0.2)
        assert source.lists == 2  # one request, one relist
    finally:
        pleg.stop()


def test_a_request_during_a_relist_gets_one_more_after_it():
    source = Lister()
    pleg = GenericPLEG(source, period=30)
    source.hold = True
    pleg.start()
    try:
        assert source.holding.wait(3)
        pleg.request_relist()  # this relist may have listed before the requester's time: not enough
        source.release.set()
        assert wait_until(lambda: source.lists == 2, timeout=3.0, interval=0.005)
    finally:
        pleg.stop()


class SlowAPI(FakeDockerAPI):
    """Inspects take a while and record how many run at once; some raise a non-Docker error."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most = 0
        self.broken: set[str] = set()

    def inspect_container(self, cid: str) -> dict:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            time.sleep(0.02)
            if cid in self.broken:
                raise RuntimeError("docker answered garbage")
            return super().inspect_container(cid)
        finally:
            with self.lock:
                self.in_flight -= 1


def pods(n: int) -> list[dict]:
    return [{"metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"uid-{i}"}} for i in range(n)]


def steps_of_a_busy_node(api: FakeDockerAPI):
    """Ten pods coming up, crashing and going: yields after each change so a relist can follow."""
    for i, pod in enumerate(pods(10)):
        api.add(f"sb{i}", sandbox_labels(pod=pod))
        api.add(f"c{i}", app_labels(pod=pod), state="created", second=1)
    yield
    for i in range(10):
        api.items[f"c{i}"]["state"] = "running"
    api.add("late", app_labels("side", pod=pods(1)[0]), second=2)
    yield
    for i in range(0, 10, 2):
        api.items[f"c{i}"].update(state="exited", exit_code=1)
    del api.items["sb9"], api.items["c9"]
    yield


def test_concurrent_inspects_give_the_same_events_and_cache_as_serial_ones(clock):
    runs = {}
    for concurrency in (1, 8):
        api = SlowAPI()
        pleg = GenericPLEG(DockerRuntime(api, node_name="n1"), clock=clock, inspect_concurrency=concurrency,
                           inspect_wait=COMPLETE)
        relists = []
        for _ in steps_of_a_busy_node(api):
            relists.append(pleg.relist().events)
        runs[concurrency] = (relists, {uid: pleg.cache.get(uid) for uid in pleg.cache.uids()}, api.most)
    serial, concurrent = runs[1], runs[8]
    assert serial[2] == 1 and concurrent[2] > 1  # the concurrent run really overlapped
    assert concurrent[:2] == serial[:2]
    assert sum(len(events) for events in serial[0]) == 20 + 11 + 5 + 4  # sb9 and c9 each die and go


def test_a_failed_inspect_is_retried_next_relist_while_other_pods_events_flow(clock):
    api = SlowAPI()
    delivered: list[str] = []
    pleg = GenericPLEG(DockerRuntime(api, node_name="n1"), clock=clock, inspect_wait=COMPLETE)
    pleg._deliver = lambda uid, events: delivered.append(uid)  # type: ignore[method-assign]
    for i, pod in enumerate(pods(4)):
        api.add(f"sb{i}", sandbox_labels(pod=pod))
    api.broken.add("sb1")
    api.fail_inspect.add("sb2")  # NotFound: removed since the list
    first = pleg.relist()
    assert first.failed_pods == {"uid-1", "uid-2"}
    assert sorted(delivered) == ["uid-0", "uid-3"] and sorted(pleg.cache.uids()) == ["uid-0", "uid-3"]
    api.broken.clear()
    api.fail_inspect.clear()
    api.inspects.clear()
    second = pleg.relist()
    assert types(second) == [(EventType.CONTAINER_STARTED, "sb1"), (EventType.CONTAINER_STARTED, "sb2")]
    assert sorted(api.inspects) == ["sb1", "sb2"] and second.failed_pods == set()
    assert sorted(pleg.cache.uids()) == ["uid-0", "uid-1", "uid-2", "uid-3"]


class GatedAPI(FakeDockerAPI):
    """Inspects of the containers in `gated` wait until `gate` opens, as dockerd's inspect of a container
    waits for that container's start to finish."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gated: set[str] = set()

    def inspect_container(self, cid: str) -> dict:
        if cid in self.gated:
            assert self.gate.wait(5)
        return super().inspect_container(cid)


def test_a_slow_inspect_holds_only_its_pod_and_is_not_repeated(clock):
    api = GatedAPI()
    delivered: list[str] = []
    pleg = GenericPLEG(DockerRuntime(api, node_name="n1"), clock=clock, inspect_wait=0.05)
    pleg._deliver = lambda uid, events: delivered.append(uid)  # type: ignore[method-assign]
    for i, pod in enumerate(pods(3)):
        api.add(f"sb{i}", sandbox_labels(pod=pod))
    api.gated.add("sb1")
    try:
        started = time.monotonic()
        first = pleg.relist()
        assert time.monotonic() - started < 2  # it did not wait for the slow inspect
        assert first.failed_pods == {"uid-1"} and sorted(delivered) == ["uid-0", "uid-2"]
        # The global time moved past a worker's last action (99.0), but not for the pod still being inspected.
        assert pleg.cache.get_newer_than("uid-2", 99.0, timeout=0) is not None
        assert pleg.cache.get_newer_than("uid-1", 99.0, timeout=0) is None
        second = pleg.relist()  # the inspect is still pending: not asked again, pod still held
        assert second.failed_pods == {"uid-1"} and second.inspected == 0
        assert pleg.cache.get_newer_than("uid-1", 99.0, timeout=0) is None
        api.gate.set()
        # the answer asks for a relist at once
        assert wait_until(lambda: pleg._wake.is_set(), timeout=3.0, interval=0.005)
        clock.now += 1
        third = pleg.relist()
        assert types(third) == [(EventType.CONTAINER_STARTED, "sb1")] and third.inspected == 0
        assert api.inspects.count("sb1") == 1
        assert pleg.cache.get_newer_than("uid-1", 99.0, timeout=0).sandboxes[0].id == "sb1"
    finally:
        api.gate.set()
        pleg.stop()


def test_a_held_pod_ignores_the_global_time_until_it_is_set_again(clock):
    from nodeagent.pleg import PodCache
    from nodeagent.runtime.types import PodStatus

    cache = PodCache(clock)
    cache.set("a", PodStatus(uid="a", name="a", namespace="ns"), 100.0)
    cache.hold("a")
    cache.update_time(200.0)
    assert cache.get_newer_than("a", 150.0, timeout=0) is None
    assert cache.get_newer_than("b", 150.0, timeout=0) is not None  # not held: the global time counts
    cache.set("a", PodStatus(uid="a", name="a", namespace="ns"), 201.0)
    assert not cache.is_held("a") and cache.get_newer_than("a", 150.0, timeout=0) is not None
