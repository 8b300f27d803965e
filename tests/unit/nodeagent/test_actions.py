"""computePodActions on tables of pod spec × runtime state, plus properties over generated states."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodeagent.runtime.actions import (
    KillReason,
    PodActions,
    RestartPolicy,
    compute_pod_actions,
    next_init_container,
    restart_policy,
)
from nodeagent.runtime.spechash import container_hash
from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState, SandboxStatus

RUNNING, EXITED, CREATED, UNKNOWN = (ContainerState.RUNNING, ContainerState.EXITED, ContainerState.CREATED,
                                     ContainerState.UNKNOWN)


def spec_container(name: str) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "command": ["sleep", "3600"]}


def pod(apps: tuple[str, ...] = ("a", "b"), inits: tuple[str, ...] = (), *, policy: str | None = "Always",
        host_network: bool = False, deleted: bool = False, phase: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [spec_container(n) for n in apps]}
    if inits:
        spec["initContainers"] = [spec_container(n) for n in inits]
    if policy:
        spec["restartPolicy"] = policy
    if host_network:
        spec["hostNetwork"] = True
    meta: dict[str, Any] = {"name": "p", "namespace": "default", "uid": "u1"}
    if deleted:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    obj = {"metadata": meta, "spec": spec}
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def ctr(name: str, state: ContainerState = RUNNING, *, exit: int = 0, attempt: int = 0, cid: str | None = None,
        hash: str | None = None, reason: str = "") -> ContainerStatus:
    return ContainerStatus(id=cid or f"{name}-{attempt}", name=name, state=state, image="busybox",
                           hash=container_hash(spec_container(name)) if hash is None else hash,
                           restart_count=attempt, exit_code=exit, reason=reason,
                           created_at=datetime(2026, 1, 1, 0, 0, attempt, tzinfo=UTC))


def sandbox(sid: str = "sb", *, ready: bool = True, attempt: int = 0, ip: str = "10.88.0.2",
            host_network: bool = False) -> SandboxStatus:
    return SandboxStatus(id=sid, state=SandboxState.READY if ready else SandboxState.NOTREADY, attempt=attempt,
                         ip=ip, host_network=host_network)


def status(*containers: ContainerStatus, sandboxes: tuple[SandboxStatus, ...] = (sandbox(),)) -> PodStatus:
    return PodStatus(uid="u1", name="p", namespace="default", sandboxes=sandboxes, containers=containers)


NONE = status(sandboxes=())
READY = (sandbox(),)


def expect(**fields: Any) -> dict[str, Any]:
    kills = fields.pop("kill", {})
    base = PodActions(sandbox_id=fields.pop("sandbox_id", "sb"), **fields)
    return {**vars(base), "containers_to_kill": kills}


def normalised(actions: PodActions) -> dict[str, Any]:
    return {**vars(actions),
            "containers_to_kill": {cid: (k.name, k.reason) for cid, k in actions.containers_to_kill.items()}}


CASES = [
    # --- sandbox: podSandboxChanged ---
    pytest.param(pod(), NONE, {},
                 expect(kill_pod=True, create_sandbox=True, sandbox_id="", containers_to_start=(0, 1)),
                 id="new-pod-creates-sandbox-and-starts-all"),
    pytest.param(pod(inits=("i1", "i2")), NONE, {},
                 expect(kill_pod=True, create_sandbox=True, sandbox_id="", next_init_container="i1"),
                 id="new-pod-with-inits-starts-first-init-only"),
    pytest.param(pod(), status(ctr("a"), ctr("b"), sandboxes=(sandbox(ready=False),)), {},
                 expect(kill_pod=True, create_sandbox=True, attempt=1, containers_to_start=(0, 1)),
                 id="sandbox-not-ready-recreated-next-attempt"),
    pytest.param(pod(), status(ctr("a"), ctr("b"), sandboxes=(sandbox("new", attempt=3), sandbox("old", attempt=2))),
                 {}, expect(kill_pod=True, create_sandbox=True, sandbox_id="new", attempt=4,
                            containers_to_start=(0, 1)),
                 id="two-ready-sandboxes-recreated"),
    pytest.param(pod(), status(ctr("a"), sandboxes=(sandbox(ip=""),)), {},
                 expect(kill_pod=True, create_sandbox=True, attempt=1, containers_to_start=(0, 1)),
                 id="sandbox-without-ip-recreated"),
    pytest.param(pod(host_network=True), status(ctr("a"), sandboxes=(sandbox(ip="", host_network=True),)), {},
                 expect(containers_to_start=(1,)),
                 id="host-network-sandbox-needs-no-ip"),
    pytest.param(pod(host_network=True), status(ctr("a"), ctr("b")), {},
                 expect(kill_pod=True, create_sandbox=True, sandbox_id="", attempt=1, containers_to_start=(0, 1)),
                 id="network-mode-changed-recreated-without-reuse"),
    pytest.param(pod(), status(ctr("a"), sandboxes=(sandbox("old", ready=False, attempt=0),
                                                      sandbox("new", ready=False, attempt=2))), {},
                 expect(kill_pod=True, create_sandbox=True, sandbox_id="new", attempt=3, containers_to_start=(0, 1)),
                 id="newest-sandbox-picked-by-attempt"),
    pytest.param(pod(policy="Never"), status(ctr("a", EXITED), sandboxes=(sandbox(ready=False, attempt=1),)), {},
                 expect(kill_pod=True, attempt=2),
                 id="never-pod-that-ran-is-not-given-new-sandbox"),
    pytest.param(pod(policy="Never"), status(sandboxes=(sandbox(ready=False, attempt=1),)), {},
                 expect(kill_pod=True, create_sandbox=True, attempt=2, containers_to_start=(0, 1)),
                 id="never-pod-that-never-ran-retries-sandbox"),
    pytest.param(pod(policy="Never"), status(ctr("a", EXITED), sandboxes=(sandbox(ready=False),)), {},
                 expect(kill_pod=True, attempt=1),
                 id="never-pod-first-sandbox-lost-after-running-stops"),
    pytest.param(pod(policy="OnFailure"), status(ctr("a", EXITED), ctr("b", EXITED),
                                                 sandboxes=(sandbox(ready=False),)), {},
                 expect(kill_pod=True, attempt=1),
                 id="onfailure-all-succeeded-no-new-sandbox"),
    pytest.param(pod(policy="OnFailure"), status(ctr("a", EXITED), ctr("b", EXITED, exit=1),
                                                 sandboxes=(sandbox(ready=False),)), {},
                 expect(kill_pod=True, create_sandbox=True, attempt=1, containers_to_start=(1,)),
                 id="onfailure-new-sandbox-restarts-only-failed"),
    pytest.param(pod(inits=("i1",)), status(ctr("i1", EXITED), ctr("a", EXITED), ctr("b"),
                                            sandboxes=(sandbox(ready=False),)), {},
                 expect(kill_pod=True, create_sandbox=True, attempt=1, next_init_container="i1"),
                 id="new-sandbox-reruns-init-containers"),
    pytest.param(pod(inits=("i1",), policy="OnFailure"),
                 status(ctr("i1", EXITED), ctr("a", EXITED), ctr("b", EXITED), sandboxes=(sandbox(ready=False),)),
                 {}, expect(kill_pod=True, attempt=1),
                 id="onfailure-initialised-and-done-no-new-sandbox"),
    # --- deletion and terminal phases ---
    pytest.param(pod(deleted=True), status(ctr("a"), ctr("b")), {}, expect(kill_pod=True),
                 id="deleted-pod-killed-whole"),
    pytest.param(pod(deleted=True), NONE, {}, expect(kill_pod=True, sandbox_id=""),
                 id="deleted-pod-without-sandbox-gets-none"),
    pytest.param(pod(deleted=True, inits=("i1",)), status(), {}, expect(kill_pod=True),
                 id="deleted-pod-runs-no-init"),
    pytest.param(pod(phase="Succeeded"), status(ctr("a", EXITED), ctr("b", EXITED)), {}, expect(kill_pod=True),
                 id="succeeded-phase-never-restarts"),
    pytest.param(pod(phase="Failed"), status(sandboxes=(sandbox(ready=False),)), {},
                 expect(kill_pod=True, attempt=1),
                 id="failed-phase-gets-no-new-sandbox"),
    # --- init containers ---
    pytest.param(pod(inits=("i1", "i2")), status(), {}, expect(next_init_container="i1"),
                 id="init-first-in-existing-sandbox"),
    pytest.param(pod(inits=("i1", "i2")), status(ctr("i1")), {}, expect(),
                 id="init-running-wait"),
    pytest.param(pod(inits=("i1", "i2")), status(ctr("i1", EXITED)), {}, expect(next_init_container="i2"),
                 id="init-succeeded-next-one"),
    pytest.param(pod(inits=("i1", "i2")), status(ctr("i1", EXITED), ctr("i2", EXITED)), {},
                 expect(containers_to_start=(0, 1)),
                 id="inits-done-start-apps"),
    pytest.param(pod(inits=("i1", "i2")), status(ctr("i1", EXITED, exit=2)), {},
                 expect(next_init_container="i1", init_failed=True),
                 id="init-failed-always-reruns"),
    pytest.param(pod(inits=("i1", "i2"), policy="OnFailure"), status(ctr("i1", EXITED), ctr("i2", EXITED, exit=1)),
                 {}, expect(next_init_container="i2", init_failed=True),
                 id="init-failed-onfailure-reruns"),
    pytest.param(pod(inits=("i1", "i2"), policy="Never"), status(ctr("i1", EXITED, exit=1)), {},
                 expect(kill_pod=True, init_failed=True),
                 id="init-failed-never-fails-pod"),
    pytest.param(pod(inits=("i1",), policy="Never"), status(ctr("i1", EXITED, reason="OOMKilled")), {},
                 expect(kill_pod=True, init_failed=True),
                 id="init-oomkilled-counts-as-failed"),
    pytest.param(pod(inits=("i1",)), status(ctr("i1", UNKNOWN)), {},
                 expect(next_init_container="i1", init_failed=True, kill={"i1-0": ("i1", KillReason.UNKNOWN)}),
                 id="init-unknown-killed-then-rerun"),
    pytest.param(pod(inits=("i1", "i2")), status(ctr("i1", EXITED), ctr("i2", CREATED)), {},
                 expect(next_init_container="i2"),
                 id="init-created-not-started-is-started"),
    pytest.param(pod(inits=("i1",)), status(ctr("i1", EXITED, exit=1, attempt=0), ctr("i1", EXITED, attempt=1)), {},
                 expect(containers_to_start=(0, 1)),
                 id="init-latest-attempt-decides"),
    pytest.param(pod(inits=("i1",)), status(ctr("a"), ctr("b")), {}, expect(),
                 id="init-gone-but-apps-running-means-done"),
    # --- app containers and restart policy ---
    pytest.param(pod(), status(ctr("a"), ctr("b")), {}, expect(), id="all-running-nothing-to-do"),
    pytest.param(pod(policy=None), status(ctr("a"), ctr("b", EXITED)), {}, expect(containers_to_start=(1,)),
                 id="default-policy-is-always"),
    pytest.param(pod(), status(ctr("a"), ctr("b", EXITED, exit=1)), {}, expect(containers_to_start=(1,)),
                 id="always-restarts-failed"),
    pytest.param(pod(), status(ctr("a"), ctr("b", EXITED)), {}, expect(containers_to_start=(1,)),
                 id="always-restarts-succeeded"),
    pytest.param(pod(policy="OnFailure"), status(ctr("a"), ctr("b", EXITED)), {}, expect(),
                 id="onfailure-keeps-succeeded-down"),
    pytest.param(pod(policy="OnFailure"), status(ctr("a"), ctr("b", EXITED, exit=137)), {},
                 expect(containers_to_start=(1,)),
                 id="onfailure-restarts-failed"),
    pytest.param(pod(policy="Never"), status(ctr("a"), ctr("b", EXITED, exit=1)), {}, expect(),
                 id="never-keeps-failed-down"),
    pytest.param(pod(policy="Never"), status(ctr("a", EXITED), ctr("b", EXITED, exit=1)), {},
                 expect(kill_pod=True),
                 id="never-all-exited-stops-pod"),
    pytest.param(pod(policy="OnFailure"), status(ctr("a", EXITED), ctr("b", EXITED)), {}, expect(kill_pod=True),
                 id="onfailure-all-succeeded-stops-pod"),
    pytest.param(pod(policy="Never"), status(ctr("a"), ctr("b", CREATED)), {}, expect(containers_to_start=(1,)),
                 id="created-container-started-even-never"),
    pytest.param(pod(policy="Never"), status(ctr("a"), ctr("b", UNKNOWN)), {},
                 expect(containers_to_start=(1,), kill={"b-0": ("b", KillReason.UNKNOWN)}),
                 id="unknown-container-killed-and-restarted"),
    pytest.param(pod(policy="Never"), status(ctr("a")), {}, expect(containers_to_start=(1,)),
                 id="never-started-container-started"),
    pytest.param(pod(policy="Never"), status(ctr("a", hash="stale"), ctr("b")), {},
                 expect(containers_to_start=(0,), kill={"a-0": ("a", KillReason.SPEC_CHANGED)}),
                 id="spec-changed-restarts-even-never"),
    pytest.param(pod(), status(ctr("a"), ctr("b")), {"liveness_failed": frozenset({"a-0"})},
                 expect(containers_to_start=(0,), kill={"a-0": ("a", KillReason.LIVENESS)}),
                 id="liveness-failed-always-kill-and-restart"),
    pytest.param(pod(policy="Never"), status(ctr("a"), ctr("b")), {"liveness_failed": frozenset({"a-0"})},
                 expect(kill={"a-0": ("a", KillReason.LIVENESS)}),
                 id="liveness-failed-never-kill-only"),
    pytest.param(pod(apps=("a",), policy="Never"), status(ctr("a")), {"liveness_failed": frozenset({"a-0"})},
                 expect(kill_pod=True),
                 id="liveness-failed-never-last-container-stops-pod"),
    pytest.param(pod(policy="OnFailure"), status(ctr("a"), ctr("b")), {"startup_failed": frozenset({"b-0"})},
                 expect(containers_to_start=(1,), kill={"b-0": ("b", KillReason.STARTUP)}),
                 id="startup-failed-onfailure-kill-and-restart"),
    pytest.param(pod(), status(ctr("a", attempt=1), ctr("b")), {"liveness_failed": frozenset({"a-0"})},
                 expect(), id="liveness-result-of-replaced-container-ignored"),
    pytest.param(pod(), status(ctr("a", attempt=0), ctr("a", attempt=1), ctr("b")), {},
                 expect(kill={"a-0": ("a", KillReason.UNKNOWN)}),
                 id="older-running-instance-killed"),
    pytest.param(pod(), status(ctr("a"), ctr("b"), ctr("ghost")), {},
                 expect(kill={"ghost-0": ("ghost", KillReason.UNKNOWN)}),
                 id="container-not-in-spec-killed"),
    pytest.param(pod(inits=("i1",)), status(ctr("i1"), ctr("ghost")), {},
                 expect(kill={"ghost-0": ("ghost", KillReason.UNKNOWN)}),
                 id="stray-killed-while-init-runs"),
]


@pytest.mark.parametrize(("pod_obj", "runtime", "probes", "expected"), CASES)
def test_compute_pod_actions(pod_obj: dict[str, Any], runtime: PodStatus, probes: dict[str, Any],
                             expected: dict[str, Any]):
    assert normalised(compute_pod_actions(pod_obj, runtime, **probes)) == expected


def test_kill_messages_say_what_happens():
    actions = compute_pod_actions(pod(), status(ctr("a"), ctr("b")), liveness_failed=frozenset({"a-0"}))
    assert actions.containers_to_kill["a-0"].message == "Container a failed liveness probe, will be restarted"
    actions = compute_pod_actions(pod(policy="Never"), status(ctr("a", hash="x"), ctr("b")))
    assert actions.containers_to_kill["a-0"].message == "Container a definition changed, will be restarted"


def test_restart_policy_defaults_and_junk():
    assert restart_policy({"spec": {}}) is RestartPolicy.ALWAYS
    assert restart_policy({"spec": {"restartPolicy": "Sometimes"}}) is RestartPolicy.ALWAYS
    assert restart_policy({"spec": {"restartPolicy": "Never"}}) is RestartPolicy.NEVER


def test_next_init_reports_the_failed_status():
    failed = ctr("i2", EXITED, exit=3)
    progress = next_init_container(pod(inits=("i1", "i2")), status(ctr("i1", EXITED), failed))
    assert progress.failed == failed and progress.next == "i2" and not progress.done


# --- properties over generated runtime states ---

APPS = ("a", "b", "c")
INITS = ("i1", "i2")


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, Any], PodStatus, frozenset[str], frozenset[str]]:
    inits = INITS[:draw(st.integers(0, 2))]
    pod_obj = pod(APPS, inits, policy=draw(st.sampled_from(["Always", "OnFailure", "Never", None])),
                  host_network=draw(st.booleans()), deleted=draw(st.booleans()),
                  phase=draw(st.sampled_from([None, "Pending", "Running", "Succeeded"])))
    containers = []
    for name in inits + APPS:
        for attempt in range(draw(st.integers(0, 2))):
            containers.append(ctr(name, draw(st.sampled_from(list(ContainerState))), attempt=attempt,
                                  exit=draw(st.sampled_from([0, 1, 137])),
                                  hash=draw(st.sampled_from([None, "stale"]))))
    sandboxes = tuple(sandbox(f"sb{i}", ready=draw(st.booleans()), attempt=i,
                              ip=draw(st.sampled_from(["", "10.0.0.9"])), host_network=draw(st.booleans()))
                      for i in range(draw(st.integers(0, 2))))
    ids = [c.id for c in containers]
    liveness = frozenset(draw(st.lists(st.sampled_from(ids))) if ids else ())
    startup = frozenset(draw(st.lists(st.sampled_from(ids))) if ids else ())
    return pod_obj, status(*containers, sandboxes=sandboxes), liveness, startup


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_properties(scenario: tuple[dict[str, Any], PodStatus, frozenset[str], frozenset[str]]):
    pod_obj, runtime, liveness, startup = scenario
    actions = compute_pod_actions(pod_obj, runtime, liveness_failed=liveness, startup_failed=startup)
    known_ids = {c.id for c in runtime.containers}
    # Only containers the runtime has are killed, and only the whole pod is killed when it is.
    assert set(actions.containers_to_kill) <= known_ids
    if actions.kill_pod:
        assert not actions.containers_to_kill
    # Never start a container whose running instance survives the sync.
    for index in actions.containers_to_start:
        latest = runtime.latest(APPS[index])
        if latest is not None and latest.state is RUNNING:
            assert actions.kill_pod or latest.id in actions.containers_to_kill
    # Never start an app container while initialisation is unfinished; one init container at a time.
    if actions.next_init_container is not None:
        assert not actions.containers_to_start
    if not actions.create_sandbox and not next_init_container(pod_obj, runtime).done:
        assert not actions.containers_to_start
    if actions.create_sandbox and (pod_obj["spec"].get("initContainers")):
        assert actions.next_init_container == "i1" and not actions.containers_to_start
    # Killing the pod without a new sandbox starts nothing; a deleted pod starts nothing.
    if actions.kill_pod and not actions.create_sandbox:
        assert not actions.containers_to_start and actions.next_init_container is None
    if pod_obj["metadata"].get("deletionTimestamp"):
        assert actions.kill_pod and not actions.create_sandbox
    # A new sandbox always comes with killing the old pod.
    if actions.create_sandbox:
        assert actions.kill_pod
    assert list(actions.containers_to_start) == sorted(set(actions.containers_to_start))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=5), st.integers() | st.text(max_size=5), max_size=6))
def test_hash_ignores_key_order(fields: dict[str, Any]):
    reordered = dict(reversed(list(fields.items())))
    assert container_hash(fields) == container_hash(reordered)
