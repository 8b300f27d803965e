"""Container GC selection (nodeagent/gc/containers.py): one table row per rule of upstream's
kuberuntime_gc.go, then the manager's removal steps against a fake runtime."""

from __future__ import annotations

import pytest

from nodeagent.gc.containers import ContainerGCPolicy, select_evictable
from nodeagent.gc.manager import ContainerGC
from nodeagent.runtime.interface import RuntimeOperationError
from nodeagent.runtime.labels import Kind
from nodeagent.runtime.types import ContainerRecord, ContainerState

NOW = 10_000.0
EXITED, RUNNING, CREATED, UNKNOWN = (ContainerState.EXITED, ContainerState.RUNNING, ContainerState.CREATED,
                                     ContainerState.UNKNOWN)


def c(cid: str, uid: str = "a", name: str = "app", *, attempt: int = 0, age: float = 100.0,
      state: ContainerState = EXITED, sandbox: str = "") -> ContainerRecord:
    return ContainerRecord(id=cid, kind=Kind.CONTAINER, pod_uid=uid, name=name, state=state, created=NOW - age,
                           attempt=attempt, sandbox_id=sandbox)


def s(sid: str, uid: str = "a", *, attempt: int = 0, age: float = 100.0,
      state: ContainerState = EXITED) -> ContainerRecord:
    return ContainerRecord(id=sid, kind=Kind.SANDBOX, pod_uid=uid, name="POD", state=state, created=NOW - age,
                           attempt=attempt)


def unidentified(cid: str, *, age: float = 100.0, state: ContainerState = EXITED) -> ContainerRecord:
    return ContainerRecord(id=cid, kind=None, pod_uid="", name="", state=state, created=NOW - age)


ALL = frozenset({"a", "b", "c"})
DEFAULT = ContainerGCPolicy()
NO_LIMITS = ContainerGCPolicy(max_per_pod_container=-1, max_containers=-1)


@pytest.mark.parametrize("records, policy, known, removed", [
    pytest.param([c("r", state=RUNNING), c("x", attempt=1)], NO_LIMITS, frozenset(), ["x"],
                 id="running-containers-are-never-evictable"),
    pytest.param([c("young", age=5, attempt=1), c("old", age=60)],
                 ContainerGCPolicy(min_age=30, max_per_pod_container=0), ALL, ["old"], id="younger-than-min-age-stays"),
    pytest.param([c("edge", age=30)], ContainerGCPolicy(min_age=30, max_per_pod_container=0), ALL, ["edge"],
                 id="exactly-min-age-is-evictable"),
    pytest.param([c("a0", attempt=0), c("a1", attempt=1), c("a2", attempt=2)], DEFAULT, ALL, ["a0", "a1"],
                 id="default-keeps-the-latest-dead-per-unit-oldest-removed-first"),
    pytest.param([c("a0", attempt=0, age=10), c("a1", attempt=1, age=500)], DEFAULT, ALL, ["a0"],
                 id="newest-by-attempt-before-creation-time"),
    pytest.param([c("t0", attempt=3, age=50), c("t1", attempt=3, age=20)], DEFAULT, ALL, ["t0"],
                 id="same-attempt-newest-created-kept"),
    pytest.param([c("x0", name="x"), c("y0", name="y"), c("x1", name="x", attempt=1)], DEFAULT, ALL, ["x0"],
                 id="units-are-pod-and-container-name"),
    pytest.param([c("a0", "a"), c("b0", "b")], DEFAULT, ALL, [], id="same-name-in-two-pods-are-two-units"),
    pytest.param([c("a0", attempt=0), c("a1", attempt=1), c("a2", attempt=2)],
                 ContainerGCPolicy(max_per_pod_container=2), ALL, ["a0"], id="max-per-pod-container-two"),
    pytest.param([c("a0"), c("a1", attempt=1)], ContainerGCPolicy(max_per_pod_container=-1), ALL, [],
                 id="negative-max-per-pod-container-is-no-limit"),
    pytest.param([c("a0"), c("a1", attempt=1)], ContainerGCPolicy(max_per_pod_container=0), ALL, ["a0", "a1"],
                 id="max-per-pod-container-zero-removes-every-dead-one"),
    pytest.param([c("d0", "gone"), c("d1", "gone", attempt=1), c("a0")], DEFAULT, ALL, ["d0", "d1"],
                 id="deleted-pod-loses-every-dead-container-even-the-latest"),
    pytest.param([c("d0", "gone"), c("d1", "gone", attempt=1)], DEFAULT, None, ["d0"],
                 id="sources-not-ready-no-pod-counts-as-deleted"),
    pytest.param([c("d0", "gone", age=1), c("d1", "gone", attempt=1)], ContainerGCPolicy(min_age=30), ALL, ["d1"],
                 id="deleted-pods-still-respect-min-age"),
    pytest.param([c("d0", "gone", state=RUNNING)], DEFAULT, ALL, [], id="running-container-of-a-deleted-pod-stays"),
    pytest.param([unidentified("u1"), c("a0"), c("a1", attempt=1)], DEFAULT, None, ["u1", "a0"],
                 id="unidentified-go-first-even-before-sources-are-ready"),
    pytest.param([unidentified("u1", state=RUNNING), unidentified("u2", age=1)], ContainerGCPolicy(min_age=30), ALL,
                 [], id="unidentified-running-or-young-stay"),
    pytest.param([unidentified("u-late", age=10), unidentified("u-early", age=90)], DEFAULT, ALL,
                 ["u-early", "u-late"], id="unidentified-oldest-first"),
    pytest.param([c("created0", state=CREATED), c("created1", state=CREATED, attempt=1)], DEFAULT, ALL, ["created0"],
                 id="created-never-started-counts-as-dead"),
    # MaxContainers: 3 units with 3, 2 and 1 dead; limit 3 → share max(1, 3 // 3) = 1 each.
    pytest.param([c("a0", "a", attempt=0, age=90), c("a1", "a", attempt=1, age=80), c("a2", "a", attempt=2, age=70),
                  c("b0", "b", attempt=0, age=60), c("b1", "b", attempt=1, age=50), c("c0", "c", age=40)],
                 ContainerGCPolicy(max_per_pod_container=-1, max_containers=3), ALL, ["a0", "a1", "b0"],
                 id="max-containers-cuts-each-unit-to-its-share"),
    # limit 4 over 3 units: share 1 → 3 left, within the limit: the share round alone decides.
    pytest.param([c("a0", "a", age=90), c("a1", "a", attempt=1, age=80), c("b0", "b", age=60),
                  c("b1", "b", attempt=1, age=50), c("c0", "c", age=40)],
                 ContainerGCPolicy(max_per_pod_container=-1, max_containers=4), ALL, ["a0", "b0"],
                 id="max-containers-share-rounds-down"),
    # limit 1 over 3 units: the share is at least 1 (3 left), then the oldest of all go until 1 is left.
    pytest.param([c("a0", "a", age=90), c("b0", "b", age=60), c("c0", "c", age=40)],
                 ContainerGCPolicy(max_per_pod_container=-1, max_containers=1), ALL, ["a0", "b0"],
                 id="max-containers-then-oldest-first-across-units"),
    pytest.param([c("a0", "a", age=90), c("b0", "b", age=60)],
                 ContainerGCPolicy(max_per_pod_container=-1, max_containers=0), ALL, ["a0", "b0"],
                 id="max-containers-zero-removes-all-dead"),
    pytest.param([c("a0", "a"), c("b0", "b")], ContainerGCPolicy(max_per_pod_container=-1, max_containers=2), ALL, [],
                 id="max-containers-not-exceeded-nothing-happens"),
    pytest.param([c("a0", "a", age=90), c("a1", "a", attempt=1, age=80), c("b0", "b", age=60)],
                 ContainerGCPolicy(max_per_pod_container=1, max_containers=1), ALL, ["a0", "a1"],
                 id="per-unit-limit-applies-before-max-containers"),
    pytest.param([c("a5", "a", attempt=5, age=90), c("b0", "b", age=60)],
                 ContainerGCPolicy(max_per_pod_container=-1, max_containers=1), ALL, ["a5"],
                 id="across-units-oldest-by-creation-not-by-restart-count"),
])
def test_container_selection(records, policy, known, removed) -> None:
    plan = select_evictable(records, policy, NOW, known_pods=known)
    assert [e.id for e in plan.containers] == removed


def test_unknown_state_is_stopped_first_and_reasons_are_named() -> None:
    plan = select_evictable([c("u0", state=UNKNOWN), c("a1", attempt=1), unidentified("x"), c("g", "gone")],
                            DEFAULT, NOW, known_pods=frozenset({"a"}))
    assert [(e.id, e.reason, e.stop_first) for e in plan.containers] == [
        ("x", "unidentified", False), ("g", "pod deleted", False), ("u0", "maxPerPodContainer", True)]


@pytest.mark.parametrize("records, known, removed", [
    pytest.param([s("s0", attempt=0), s("s1", attempt=1), s("s2", attempt=2)], ALL, ["s1", "s0"],
                 id="live-pod-keeps-its-newest-sandbox"),
    pytest.param([s("s0", attempt=0, state=RUNNING), s("s1", attempt=1)], ALL, [],
                 id="newest-kept-even-dead-and-a-running-older-one-too"),
    pytest.param([s("s0", "gone"), s("s1", "gone", attempt=1)], ALL, ["s1", "s0"],
                 id="deleted-pod-loses-every-inactive-sandbox"),
    pytest.param([s("s0", "gone"), s("s1", "gone", attempt=1)], None, ["s0"],
                 id="sources-not-ready-keep-the-newest"),
    pytest.param([s("s0", "gone", state=RUNNING)], ALL, [], id="a-running-sandbox-is-active"),
    pytest.param([s("s0", "gone"), c("c0", "gone", state=RUNNING, sandbox="s0")], ALL, [],
                 id="a-sandbox-with-a-container-left-is-active"),
    pytest.param([s("s0", "gone"), c("c0", "gone", sandbox="s0")], ALL, ["s0"],
                 id="its-containers-removed-in-this-round-no-longer-hold-it"),
    pytest.param([s("s0", attempt=0), s("s1", attempt=1), c("c0", sandbox="s0")], ALL, [],
                 id="an-old-sandbox-whose-dead-container-is-kept-stays"),
    pytest.param([s("s0", age=1), s("s1", attempt=1, age=1)], ALL, ["s0"], id="sandboxes-have-no-min-age"),
])
def test_sandbox_selection(records, known, removed) -> None:
    plan = select_evictable(records, ContainerGCPolicy(min_age=30), NOW, known_pods=known)
    assert list(plan.sandboxes) == removed


class FakeRuntime:
    def __init__(self, records: list[ContainerRecord], *, failing: frozenset[str] = frozenset()) -> None:
        self.records = records
        self.failing = failing
        self.calls: list[tuple[str, str]] = []

    def container_records(self) -> list[ContainerRecord]:
        return list(self.records)

    def _call(self, what: str, cid: str) -> None:
        self.calls.append((what, cid))
        if cid in self.failing:
            raise RuntimeOperationError(f"{what} {cid} refused")

    def stop_container(self, container_id: str, grace_seconds: float) -> None:
        self._call("stop", container_id)

    def remove_container(self, container_id: str) -> None:
        self._call("remove", container_id)

    def stop_sandbox(self, sandbox_id: str) -> None:
        self._call("stop-sandbox", sandbox_id)

    def remove_sandbox(self, sandbox_id: str) -> None:
        self._call("remove-sandbox", sandbox_id)


def test_manager_removes_containers_then_sandboxes_and_keeps_going_past_errors() -> None:
    runtime = FakeRuntime([c("a0"), c("a1", attempt=1, state=UNKNOWN), c("a2", attempt=2),
                           c("g0", "gone", sandbox="sg"), s("sg", "gone")], failing=frozenset({"a0"}))
    gc = ContainerGC(runtime, DEFAULT, known_pods=lambda: frozenset({"a"}), clock=lambda: NOW)
    result = gc.garbage_collect()
    assert runtime.calls == [("remove", "g0"), ("remove", "a0"), ("stop", "a1"), ("remove", "a1"),
                             ("stop-sandbox", "sg"), ("remove-sandbox", "sg")]
    assert len(result.errors) == 1 and "a0" in result.errors[0]
