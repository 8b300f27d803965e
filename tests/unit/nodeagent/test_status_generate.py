"""generateAPIPodStatus on tables of pod × runtime state; each row checks the status fields it is about."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState, SandboxStatus
from nodeagent.status.generate import generate_pod_status, get_phase, status_changed

RUNNING, EXITED, CREATED, UNKNOWN = (ContainerState.RUNNING, ContainerState.EXITED, ContainerState.CREATED,
                                     ContainerState.UNKNOWN)
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EARLIER = "2026-03-01T11:00:00Z"


def t(second: int) -> datetime:
    return datetime(2026, 3, 1, 11, 30, second, tzinfo=UTC)


def pod(apps: tuple[str, ...] = ("a",), inits: tuple[str, ...] = (), *, policy: str = "Always",
        old: dict[str, Any] | None = None, deleted: bool = False, **spec_extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": n, "image": f"img-{n}"} for n in apps],
                            "restartPolicy": policy, **spec_extra}
    if inits:
        spec["initContainers"] = [{"name": n, "image": f"img-{n}"} for n in inits]
    meta: dict[str, Any] = {"name": "p", "namespace": "default", "uid": "u1"}
    if deleted:
        meta["deletionTimestamp"] = EARLIER
    return {"metadata": meta, "spec": spec, "status": old or {}}


def ctr(name: str, state: ContainerState = RUNNING, *, exit: int = 0, attempt: int = 0, reason: str = "",
        message: str = "") -> ContainerStatus:
    return ContainerStatus(id=f"{name}{attempt}" + "0" * 10, name=name, state=state, image=f"img-{name}",
                           image_id="sha256:abc", restart_count=attempt, created_at=t(attempt),
                           started_at=t(attempt) if state is not CREATED else None,
                           finished_at=t(attempt + 1) if state is EXITED else None,
                           exit_code=exit, reason=reason or ("" if state is not EXITED else
                                                              "Completed" if exit == 0 else "Error"),
                           message=message)


SANDBOX = SandboxStatus(id="sb", state=SandboxState.READY, ip="10.88.0.7")


def runtime(*containers: ContainerStatus, ips: tuple[str, ...] = ("10.88.0.7",),
            sandboxes: tuple[SandboxStatus, ...] = (SANDBOX,)) -> PodStatus:
    return PodStatus(uid="u1", name="p", namespace="default", sandboxes=sandboxes, containers=containers, ips=ips)


def at(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(obj, list):
            if part.isdigit():
                obj = obj[int(part)]
            else:  # a condition by type
                obj = next((c for c in obj if c.get("type") == part), None)
        elif isinstance(obj, dict):
            obj = obj.get(part)
        if obj is None:
            return None
    return obj


MISSING = None

CASES = [
    pytest.param(pod(), runtime(), {}, {
        "phase": "Pending", "containerStatuses.0.state": {"waiting": {"reason": "ContainerCreating"}},
        "containerStatuses.0.ready": False, "containerStatuses.0.image": "img-a",
        "conditions.Initialized.status": "True", "conditions.ContainersReady.reason": "ContainersNotReady",
        "conditions.ContainersReady.message": "containers with unready status: [a]",
        "conditions.Ready.status": "False", "conditions.PodScheduled.status": "True",
        "initContainerStatuses": MISSING}, id="nothing-started-pending"),
    pytest.param(pod(inits=("i1", "i2")), runtime(), {}, {
        "phase": "Pending", "containerStatuses.0.state.waiting.reason": "PodInitializing",
        "initContainerStatuses.0.state.waiting.reason": "PodInitializing",
        "conditions.Initialized.status": "False", "conditions.Initialized.reason": "ContainersNotInitialized",
        "conditions.Initialized.message": "containers with incomplete status: [i1 i2]"},
     id="init-pending"),
    pytest.param(pod(), runtime(ctr("a")), {}, {
        "phase": "Running", "containerStatuses.0.state": {"running": {"startedAt": "2026-03-01T11:30:00Z"}},
        "containerStatuses.0.ready": True, "containerStatuses.0.started": True,
        "containerStatuses.0.containerID": "docker://a00000000000",
        "containerStatuses.0.imageID": "docker://sha256:abc",
        "containerStatuses.0.restartCount": 0, "conditions.Ready.status": "True",
        "conditions.ContainersReady.status": "True", "podIP": "10.88.0.7", "podIPs": [{"ip": "10.88.0.7"}]},
     id="running-without-probes-is-ready"),
    pytest.param(pod(old={}, containers=[{"name": "a", "image": "img-a", "readinessProbe": {"exec": {}}}]),
                 runtime(ctr("a")), {}, {"containerStatuses.0.ready": False, "conditions.Ready.status": "False",
                                         "phase": "Running"},
                 id="readiness-probe-without-result-not-ready"),
    pytest.param(pod(containers=[{"name": "a", "image": "img-a", "readinessProbe": {"exec": {}}}]),
                 runtime(ctr("a")), {"ready": {"a": True}},
                 {"containerStatuses.0.ready": True, "conditions.Ready.status": "True"},
                 id="readiness-probe-success-ready"),
    pytest.param(pod(), runtime(ctr("a")), {"ready": {"a": False}},
                 {"containerStatuses.0.ready": False, "conditions.ContainersReady.status": "False"},
                 id="readiness-failure-not-ready"),
    pytest.param(pod(containers=[{"name": "a", "image": "img-a", "startupProbe": {"exec": {}}}]),
                 runtime(ctr("a")), {"ready": {"a": True}},
                 {"containerStatuses.0.started": False, "containerStatuses.0.ready": False},
                 id="startup-probe-pending-not-started-not-ready"),
    pytest.param(pod(), runtime(ctr("a", EXITED, exit=1, attempt=0), ctr("a", attempt=1)), {}, {
        "containerStatuses.0.restartCount": 1, "containerStatuses.0.state.running.startedAt": "2026-03-01T11:30:01Z",
        "containerStatuses.0.lastState.terminated": {
            "exitCode": 1, "reason": "Error", "startedAt": "2026-03-01T11:30:00Z",
            "finishedAt": "2026-03-01T11:30:01Z", "containerID": "docker://a00000000000"},
        "phase": "Running"}, id="restarted-container-has-last-state"),
    pytest.param(pod(), runtime(ctr("a", EXITED, exit=1, attempt=2)),
                 {"waiting_reasons": {"a": ("CrashLoopBackOff", "back-off 40s restarting failed container=a")}}, {
        "containerStatuses.0.state.waiting": {"reason": "CrashLoopBackOff",
                                              "message": "back-off 40s restarting failed container=a"},
        "containerStatuses.0.lastState.terminated.exitCode": 1, "containerStatuses.0.restartCount": 2,
        "containerStatuses.0.ready": False, "phase": "Running"}, id="crash-loop-back-off"),
    pytest.param(pod(), runtime(), {"waiting_reasons": {"a": ("ErrImagePull", "pull access denied")}}, {
        "containerStatuses.0.state.waiting.reason": "ErrImagePull", "containerStatuses.0.lastState": MISSING,
        "phase": "Pending"}, id="image-pull-error-waiting"),
    pytest.param(pod(), runtime(ctr("a")), {"waiting_reasons": {"a": ("CrashLoopBackOff", "stale")}},
                 {"containerStatuses.0.state.running.startedAt": "2026-03-01T11:30:00Z"},
                 id="waiting-reason-ignored-for-running"),
    pytest.param(pod(policy="Never"), runtime(ctr("a", EXITED)), {"waiting_reasons": {"a": ("CrashLoopBackOff", "")}}, {
        "phase": "Succeeded", "containerStatuses.0.state.terminated.reason": "Completed",
        "conditions.ContainersReady.reason": "PodCompleted", "conditions.Ready.reason": "PodCompleted",
        "conditions.Ready.status": "False"}, id="never-succeeded-ignores-waiting-reason"),
    pytest.param(pod(("a", "b"), policy="Never"), runtime(ctr("a", EXITED), ctr("b", EXITED, exit=2)), {},
                 {"phase": "Failed", "containerStatuses.1.state.terminated.exitCode": 2},
                 id="never-one-failed-pod-failed"),
    pytest.param(pod(("a", "b"), policy="OnFailure"), runtime(ctr("a", EXITED), ctr("b", EXITED, exit=2)), {},
                 {"phase": "Running"}, id="onfailure-failed-restarting-is-running"),
    pytest.param(pod(("a", "b"), policy="OnFailure"), runtime(ctr("a", EXITED), ctr("b", EXITED)), {},
                 {"phase": "Succeeded"}, id="onfailure-all-succeeded"),
    pytest.param(pod(policy="Always"), runtime(ctr("a", EXITED)), {}, {"phase": "Running"},
                 id="always-all-exited-is-running"),
    pytest.param(pod(("a", "b")), runtime(ctr("a")), {}, {"phase": "Pending"},
                 id="one-of-two-not-started-is-pending"),
    pytest.param(pod(inits=("i1",), policy="Never"), runtime(ctr("i1", EXITED, exit=1)), {}, {
        "phase": "Failed", "initContainerStatuses.0.state.terminated.exitCode": 1,
        "initContainerStatuses.0.ready": False, "conditions.Initialized.status": "False"},
     id="init-failed-never-pod-failed"),
    pytest.param(pod(inits=("i1",), policy="Never"), runtime(ctr("i1", EXITED, exit=1), ctr("a")), {}, {
        "phase": "Failed", "containerStatuses.0.state.running.startedAt": "2026-03-01T11:30:00Z",
        "conditions.ContainersReady.status": "False", "conditions.ContainersReady.reason": "PodFailed",
        "conditions.Ready.status": "False", "conditions.Ready.reason": "PodFailed"},
     id="failed-pod-with-running-container-not-ready"),
    pytest.param(pod(inits=("i1",)), runtime(ctr("i1", EXITED, exit=1)),
                 {"waiting_reasons": {"i1": ("CrashLoopBackOff", "back-off 10s")}}, {
        "phase": "Pending", "initContainerStatuses.0.state.waiting.reason": "CrashLoopBackOff",
        "initContainerStatuses.0.lastState.terminated.exitCode": 1,
        "containerStatuses.0.state.waiting.reason": "PodInitializing"}, id="init-crash-looping-pending"),
    pytest.param(pod(inits=("i1",)), runtime(ctr("i1", EXITED), ctr("a")),
                 {"waiting_reasons": {"i1": ("CrashLoopBackOff", "stale")}}, {
        "phase": "Running", "initContainerStatuses.0.state.terminated.reason": "Completed",
        "initContainerStatuses.0.ready": True, "conditions.Initialized.status": "True",
        "conditions.Ready.status": "True"}, id="init-done-app-running"),
    pytest.param(pod(inits=("i1",)), runtime(ctr("i1")), {}, {
        "phase": "Pending", "initContainerStatuses.0.state.running.startedAt": "2026-03-01T11:30:00Z",
        "initContainerStatuses.0.ready": False, "initContainerStatuses.0.started": True}, id="init-running"),
    pytest.param(pod(inits=("i1",)), runtime(ctr("a")), {}, {"conditions.Initialized.status": "True",
                                                             "phase": "Running"},
                 id="init-removed-but-app-started-initialized"),
    pytest.param(pod(), runtime(ctr("a", CREATED)), {}, {"containerStatuses.0.state": {"waiting": {}},
                                                         "phase": "Pending"}, id="created-is-waiting"),
    pytest.param(pod(old={"containerStatuses": [{"name": "a", "restartCount": 4, "containerID": "docker://a40000000000",
                                                 "state": {"running": {"startedAt": EARLIER}}}]}),
                 runtime(ctr("a", UNKNOWN, attempt=4)), {}, {
        "containerStatuses.0.state.terminated.reason": "ContainerStatusUnknown",
        "containerStatuses.0.state.terminated.exitCode": 137, "containerStatuses.0.restartCount": 5},
     id="unknown-after-running-is-terminated"),
    pytest.param(pod(old={"containerStatuses": [{"name": "a", "restartCount": 3, "containerID": "docker://other",
                                                 "state": {"running": {"startedAt": EARLIER}}}]}),
                 runtime(ctr("a", UNKNOWN, attempt=4)), {}, {
        "containerStatuses.0.state": {"waiting": {}}, "containerStatuses.0.restartCount": 4},
     id="unknown-of-another-instance-is-waiting"),
    pytest.param(pod(old={"containerStatuses": [{"name": "a", "restartCount": 2,
                                                 "state": {"running": {"startedAt": EARLIER}}}]}),
                 runtime(), {}, {
        "containerStatuses.0.state.waiting.reason": "ContainerCreating",
        "containerStatuses.0.lastState.terminated.reason": "ContainerStatusUnknown",
        "containerStatuses.0.restartCount": 3, "phase": "Running"}, id="lost-running-container-stopped"),
    pytest.param(pod(deleted=True, old={"containerStatuses": [{"name": "a", "restartCount": 2,
                                                               "state": {"running": {"startedAt": EARLIER}}}]}),
                 runtime(), {}, {"containerStatuses.0.restartCount": 2}, id="lost-while-deleting-no-restart"),
    pytest.param(pod(policy="Never", old={"phase": "Succeeded", "containerStatuses": [
                     {"name": "a", "restartCount": 0,
                      "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
                 runtime(), {}, {"containerStatuses.0.state.terminated.reason": "Completed", "phase": "Succeeded"},
                 id="terminated-status-kept-after-gc"),
    pytest.param(pod(old={"phase": "Failed", "reason": "Evicted", "message": "low memory"}), runtime(ctr("a")), {},
                 {"phase": "Failed", "reason": "Evicted", "message": "low memory"},
                 id="terminal-phase-never-left-reason-kept"),
    pytest.param(pod(old={"phase": "Pending", "reason": "Whatever"}), runtime(ctr("a")), {},
                 {"phase": "Running", "reason": MISSING}, id="reason-dropped-on-phase-change"),
    pytest.param(pod(), runtime(ctr("a"), ips=()), {}, {"podIP": "10.88.0.7"}, id="pod-ip-from-sandbox"),
    pytest.param(pod(old={"podIP": "10.88.0.9", "podIPs": [{"ip": "10.88.0.9"}]}),
                 runtime(ips=(), sandboxes=()), {}, {"podIP": "10.88.0.9", "podIPs": [{"ip": "10.88.0.9"}]},
                 id="pod-ip-kept-when-sandbox-gone"),
    pytest.param(pod(hostNetwork=True), runtime(ctr("a"), ips=()), {"host_ip": "192.168.1.5"}, {
        "podIP": "192.168.1.5", "hostIP": "192.168.1.5", "hostIPs": [{"ip": "192.168.1.5"}]},
     id="host-network-uses-node-ip"),
    pytest.param(pod(old={"hostIP": "192.168.1.4"}), runtime(), {}, {"hostIP": "192.168.1.4"},
                 id="host-ip-kept"),
    pytest.param(pod(old={"startTime": EARLIER}), runtime(), {}, {"startTime": EARLIER}, id="start-time-kept"),
    pytest.param(pod(), runtime(), {}, {"startTime": "2026-03-01T12:00:00Z", "qosClass": "BestEffort"},
                 id="start-time-set-now"),
    pytest.param(pod(containers=[{"name": "a", "image": "x", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]),
                 runtime(), {}, {"qosClass": "Guaranteed"}, id="qos-class"),
    pytest.param(pod(old={"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": EARLIER},
                                         {"type": "PodScheduled", "status": "True", "lastTransitionTime": EARLIER}]}),
                 runtime(ctr("a")), {}, {"conditions.Ready.lastTransitionTime": "2026-03-01T12:00:00Z",
                                         "conditions.PodScheduled.lastTransitionTime": EARLIER},
                 id="transition-time-kept-only-without-change"),
    pytest.param(pod(readinessGates=[{"conditionType": "LoadBalancerReady"}]), runtime(ctr("a")), {}, {
        "conditions.Ready.reason": "ReadinessGatesNotReady", "conditions.Ready.status": "False",
        "conditions.ContainersReady.status": "True"}, id="readiness-gate-missing"),
    pytest.param(pod(readinessGates=[{"conditionType": "LoadBalancerReady"}],
                     old={"conditions": [{"type": "LoadBalancerReady", "status": "True"}]}), runtime(ctr("a")), {}, {
        "conditions.Ready.status": "True", "conditions.LoadBalancerReady.status": "True"},
     id="readiness-gate-true-and-foreign-condition-kept"),
]


@pytest.mark.parametrize(("pod_obj", "runtime_status", "kwargs", "expected"), CASES)
def test_generate_pod_status(pod_obj: dict[str, Any], runtime_status: PodStatus, kwargs: dict[str, Any],
                             expected: dict[str, Any]):
    status = generate_pod_status(pod_obj, runtime_status, now=NOW, **kwargs)
    assert {path: at(status, path) for path in expected} == expected


def test_conditions_in_upstream_order_with_foreign_first():
    status = generate_pod_status(pod(old={"conditions": [{"type": "X", "status": "True"}]}), runtime(), now=NOW)
    assert [c["type"] for c in status["conditions"]] == ["X", "Initialized", "Ready", "ContainersReady",
                                                         "PodScheduled"]


def test_statuses_in_spec_order_for_inits_and_name_order_for_apps():
    status = generate_pod_status(pod(("b", "a"), ("i2", "i1")), runtime(), now=NOW)
    assert [s["name"] for s in status["initContainerStatuses"]] == ["i2", "i1"]
    assert [s["name"] for s in status["containerStatuses"]] == ["a", "b"]


def test_input_pod_not_changed():
    obj = pod(old={"containerStatuses": [{"name": "a", "restartCount": 1, "state": {"running": {}}}]})
    before = repr(obj)
    generate_pod_status(obj, runtime(), now=NOW)
    assert repr(obj) == before


def test_regenerating_from_own_output_is_stable():
    obj = pod(("a", "b"), ("i1",))
    rt = runtime(ctr("i1", EXITED), ctr("a"), ctr("b", EXITED, exit=1, attempt=0), ctr("b", attempt=1))
    first = generate_pod_status(obj, rt, now=NOW)
    second = generate_pod_status({**obj, "status": first}, rt, now=datetime(2026, 3, 2, tzinfo=UTC))
    assert not status_changed(first, second)


@pytest.mark.parametrize(("old", "new", "changed"), [
    pytest.param(None, {"phase": "Pending"}, True, id="no-old"),
    pytest.param({"phase": "Pending"}, {"phase": "Pending"}, False, id="same"),
    pytest.param({"conditions": [{"type": "A"}, {"type": "B"}]}, {"conditions": [{"type": "B"}, {"type": "A"}]},
                 False, id="condition-order"),
    pytest.param({"containerStatuses": [{"name": "a"}, {"name": "b"}]},
                 {"containerStatuses": [{"name": "b"}, {"name": "a"}]}, False, id="container-order"),
    pytest.param({"phase": "Pending"}, {"phase": "Running"}, True, id="phase"),
    pytest.param({"conditions": [{"type": "A", "lastTransitionTime": "x"}]},
                 {"conditions": [{"type": "A", "lastTransitionTime": "y"}]}, True, id="timestamps-count"),
])
def test_status_changed(old: dict[str, Any] | None, new: dict[str, Any], changed: bool):
    assert status_changed(old, new) is changed


def test_get_phase_without_statuses_is_pending():
    assert get_phase(pod(), [], []) == "Pending"


@st.composite
def pod_and_runtime(draw: st.DrawFn) -> tuple[dict[str, Any], PodStatus]:
    inits = ("i1", "i2")[:draw(st.integers(0, 2))]
    obj = pod(("a", "b"), inits, policy=draw(st.sampled_from(["Always", "OnFailure", "Never"])))
    containers = [ctr(name, draw(st.sampled_from(list(ContainerState))), attempt=attempt,
                      exit=draw(st.sampled_from([0, 1])))
                  for name in (*inits, "a", "b") for attempt in range(draw(st.integers(0, 2)))]
    return obj, runtime(*containers)


@settings(max_examples=200, deadline=None)
@given(pod_and_runtime())
def test_status_properties(scenario: tuple[dict[str, Any], PodStatus]):
    obj, rt = scenario
    status = generate_pod_status(obj, rt, now=NOW)
    assert status["phase"] in ("Pending", "Running", "Succeeded", "Failed")
    assert [s["name"] for s in status["containerStatuses"]] == ["a", "b"]
    for container in status["containerStatuses"]:
        assert len(container["state"]) == 1
        assert not container["ready"] or "running" in container["state"]
    ready = at(status, "conditions.Ready.status") == "True"
    assert not ready or (status["phase"] == "Running" and at(status, "conditions.Initialized.status") == "True")
    again = generate_pod_status({**obj, "status": status}, rt, now=NOW)
    assert not status_changed(status, again)
