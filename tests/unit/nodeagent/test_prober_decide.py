"""The prober's pure parts: probe specs, the worker's decisions (worker.go doProbe), UpdatePodStatus'
flags, and the results manager's updates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nodeagent.prober.decide import (
    ContainerView,
    Next,
    PodView,
    WorkerState,
    after_probe,
    before_probe,
    probe_flags,
    view_of,
)
from nodeagent.prober.results import ResultsManager
from nodeagent.prober.types import (
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    ProbeSpec,
    ProbeType,
    Result,
    TCPSocketAction,
    container_probes,
    parse_probe,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
SPEC = ProbeSpec(handler=ExecAction(("true",)), period_seconds=1, failure_threshold=3, success_threshold=1)


def running(cid: str = "c1", *, started: bool = True, since: float = 100) -> ContainerView:
    return ContainerView(cid, running=True, started=started, started_at=NOW - timedelta(seconds=since))


def pod(container: ContainerView | None, *, phase: str = "Running", policy: str = "Always") -> PodView:
    return PodView(phase=phase, restart_policy=policy, container=container)


# ---- specs ----

def test_probe_defaults_and_handlers() -> None:
    spec = parse_probe({"httpGet": {"port": "http", "path": "/h", "httpHeaders": [{"name": "X", "value": "1"}]}})
    assert spec == ProbeSpec(handler=HTTPGetAction(port="http", path="/h", headers=(("X", "1"),)),
                             initial_delay_seconds=0, timeout_seconds=1, period_seconds=10, success_threshold=1,
                             failure_threshold=3, termination_grace_period_seconds=None)
    assert parse_probe({"tcpSocket": {"port": 80}, "periodSeconds": 0}).period_seconds == 1  # API minimum
    assert parse_probe({"grpc": {"port": 9000, "service": "s"}}).handler == GRPCAction(9000, "s")
    assert parse_probe({"exec": {"command": ["a", 1]}, "terminationGracePeriodSeconds": 5}) == ProbeSpec(
        handler=ExecAction(("a", "1")), termination_grace_period_seconds=5)
    assert parse_probe({"periodSeconds": 3}).handler is None
    assert parse_probe({"tcpSocket": {"port": 8080, "host": "h"}}).handler == TCPSocketAction(8080, "h")
    probes = container_probes({"livenessProbe": {"exec": {"command": ["x"]}}, "startupProbe": {"tcpSocket": {}}})
    assert set(probes) == {ProbeType.LIVENESS, ProbeType.STARTUP}


def test_view_of_reads_the_container_from_the_status() -> None:
    status = {"phase": "Running", "containerStatuses": [
        {"name": "other", "containerID": "docker://x"},
        {"name": "app", "containerID": "docker://abc", "started": True,
         "state": {"running": {"startedAt": "2026-01-01T11:59:00Z"}}}]}
    view = view_of({"spec": {"restartPolicy": "Never"}}, status, "app")
    assert view == PodView("Running", "Never", ContainerView("abc", running=True, started=True,
                                                             started_at=NOW - timedelta(seconds=60)))
    assert view_of({}, {"phase": "Pending"}, "app") == PodView("Pending", "Always", None)
    done = view_of({}, {"containerStatuses": [{"name": "app", "containerID": "docker://abc",
                                               "state": {"terminated": {"exitCode": 1}}}]}, "app")
    assert done.container == ContainerView("abc", terminated=True)


# ---- before_probe ----

@pytest.mark.parametrize(("view", "expected"), [
    pytest.param(None, Next.WAIT, id="no-status-yet"),
    pytest.param(pod(running(), phase="Succeeded"), Next.STOP, id="terminal-pod-stops"),
    pytest.param(pod(running(), phase="Failed"), Next.STOP, id="failed-pod-stops"),
    pytest.param(pod(None), Next.WAIT, id="container-not-in-status"),
    pytest.param(pod(ContainerView("")), Next.WAIT, id="container-not-created"),
])
def test_before_probe_waits_or_stops_without_a_container(view: PodView | None, expected: Next) -> None:
    step = before_probe(ProbeType.READINESS, SPEC, WorkerState(), view, now=NOW)
    assert step.next is expected and step.set == () and step.remove == ()


@pytest.mark.parametrize(("kind", "initial"), [(ProbeType.READINESS, Result.FAILURE),
                                               (ProbeType.LIVENESS, Result.SUCCESS),
                                               (ProbeType.STARTUP, Result.UNKNOWN)])
def test_a_new_container_gets_the_initial_result_and_the_old_one_is_dropped(kind: ProbeType,
                                                                            initial: Result) -> None:
    old = WorkerState(container_id="old", last_result=Result.FAILURE, result_run=2, on_hold=True)
    step = before_probe(kind, SPEC, old, pod(running("new", started=kind is not ProbeType.STARTUP)), now=NOW)
    assert step.remove == ("old",) and step.set == (("new", initial),)
    assert step.state.container_id == "new" and not step.state.on_hold and step.next is Next.PROBE


def test_on_hold_waits_until_the_container_is_replaced() -> None:
    held = WorkerState(container_id="c1", on_hold=True)
    assert before_probe(ProbeType.LIVENESS, SPEC, held, pod(running("c1")), now=NOW).next is Next.WAIT
    assert before_probe(ProbeType.LIVENESS, SPEC, held, pod(running("c2")), now=NOW).next is Next.PROBE


@pytest.mark.parametrize(("container", "policy", "expected"), [
    pytest.param(ContainerView("c1", terminated=True), "Always", Next.WAIT, id="will-restart"),
    pytest.param(ContainerView("c1", terminated=True), "OnFailure", Next.WAIT, id="may-restart"),
    pytest.param(ContainerView("c1", terminated=True), "Never", Next.STOP, id="never-restarts"),
    pytest.param(ContainerView("c1"), "Never", Next.WAIT, id="waiting-not-terminated"),
])
def test_a_container_that_does_not_run_fails(container: ContainerView, policy: str, expected: Next) -> None:
    state = WorkerState(container_id="c1", last_result=Result.SUCCESS)
    step = before_probe(ProbeType.READINESS, SPEC, state, pod(container, policy=policy), now=NOW)
    assert step.set == (("c1", Result.FAILURE),) and step.next is expected


def test_initial_delay_holds_the_probe() -> None:
    spec = ProbeSpec(handler=ExecAction(("true",)), initial_delay_seconds=5)
    state = WorkerState(container_id="c1")
    assert before_probe(ProbeType.LIVENESS, spec, state, pod(running(since=4.5)), now=NOW).next is Next.WAIT
    assert before_probe(ProbeType.LIVENESS, spec, state, pod(running(since=5)), now=NOW).next is Next.PROBE


@pytest.mark.parametrize(("kind", "started", "expected"), [
    pytest.param(ProbeType.STARTUP, False, Next.PROBE, id="startup-runs-until-started"),
    pytest.param(ProbeType.STARTUP, True, Next.WAIT, id="startup-stops-once-started"),
    pytest.param(ProbeType.LIVENESS, False, Next.WAIT, id="liveness-gated-by-startup"),
    pytest.param(ProbeType.READINESS, False, Next.WAIT, id="readiness-gated-by-startup"),
    pytest.param(ProbeType.LIVENESS, True, Next.PROBE, id="liveness-after-start"),
    pytest.param(ProbeType.READINESS, True, Next.PROBE, id="readiness-after-start"),
])
def test_startup_gates_the_other_probes(kind: ProbeType, started: bool, expected: Next) -> None:
    state = WorkerState(container_id="c1")
    assert before_probe(kind, SPEC, state, pod(running(started=started)), now=NOW).next is expected


# ---- after_probe ----

def run(kind: ProbeType, spec: ProbeSpec, results: list[Result]) -> tuple[WorkerState, list[tuple[str, Result]]]:
    state = WorkerState(container_id="c1")
    sets: list[tuple[str, Result]] = []
    for result in results:
        step = after_probe(kind, spec, state, result)
        state = step.state
        sets += step.set
    return state, sets


def test_failure_threshold_counts_failures_in_a_row() -> None:
    spec = ProbeSpec(handler=None, failure_threshold=3)
    F, S = Result.FAILURE, Result.SUCCESS
    _, sets = run(ProbeType.READINESS, spec, [F, F, S, F, F])
    assert sets == [("c1", S)]  # never three failures in a row
    state, sets = run(ProbeType.READINESS, spec, [F, F, F, F])
    assert sets == [("c1", F), ("c1", F)] and not state.on_hold and state.result_run == 4


def test_success_threshold_counts_successes_in_a_row() -> None:
    spec = ProbeSpec(handler=None, success_threshold=2, failure_threshold=1)
    S, F = Result.SUCCESS, Result.FAILURE
    _, sets = run(ProbeType.READINESS, spec, [S, F, S, S])
    assert sets == [("c1", F), ("c1", S)]


@pytest.mark.parametrize("kind", [ProbeType.LIVENESS, ProbeType.STARTUP])
def test_liveness_and_startup_failures_put_the_worker_on_hold(kind: ProbeType) -> None:
    spec = ProbeSpec(handler=None, failure_threshold=2)
    state, sets = run(kind, spec, [Result.FAILURE, Result.FAILURE])
    assert sets == [("c1", Result.FAILURE)] and state.on_hold and state.result_run == 0


# ---- UpdatePodStatus ----

def test_probe_flags_only_for_containers_with_a_result() -> None:
    running_ids = {"a": "ida", "b": "idb", "c": "idc"}
    ready, started = probe_flags(running_ids, {"ida": Result.SUCCESS, "idb": Result.FAILURE, "old": Result.SUCCESS},
                                 {"ida": Result.SUCCESS, "idc": Result.UNKNOWN})
    assert ready == {"a": True, "b": False}
    assert started == {"a": True, "c": False}


# ---- results manager ----

def test_results_manager_reports_changes_only() -> None:
    updates: list[tuple[str, str, Result]] = []
    results = ResultsManager(lambda uid, cid, r: updates.append((uid, cid, r)))
    results.set("c1", Result.FAILURE, "u1")
    results.set("c1", Result.FAILURE, "u1")
    results.set("c1", Result.SUCCESS, "u1")
    assert updates == [("u1", "c1", Result.FAILURE), ("u1", "c1", Result.SUCCESS)]
    assert results.get("c1") is Result.SUCCESS and results.subset(["c1", "c2"]) == {"c1": Result.SUCCESS}
    results.remove("c1")
    assert results.get("c1") is None
