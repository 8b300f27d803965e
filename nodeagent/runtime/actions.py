"""What syncPod must do to bring a pod's containers to its spec: upstream computePodActions.

Follows pkg/kubelet/kuberuntime/kuberuntime_manager.go (computePodActions, podSandboxChanged,
shouldRestartOnFailure, containerChanged), kuberuntime_container.go (findNextInitContainerToRun,
isInitContainerFailed) and pkg/kubelet/container/helpers.go (ShouldContainerBeRestarted), without the
sidecar, ephemeral-container and in-place-resize branches slimkube does not have.

Pure: the pod (API dict), the runtime's PodStatus and the probe results come in as data; a frozen
PodActions comes out, and the syncer carries it out in upstream SyncPod's order:
  1. kill_pod → stop every container and sandbox of the pod (containers_to_kill is then empty: the
     whole pod goes); when create_sandbox is also set, remove the old init containers too (upstream
     purgeInitContainers), since initialisation starts over in the new sandbox;
     otherwise kill containers_to_kill;
  2. create_sandbox → a new pause container with `attempt`;
  3. start next_init_container (one at a time: its exit is seen on a later sync);
  4. start containers_to_start (spec.containers indexes), each through the CrashLoopBackOff gate.

Decisions upstream makes elsewhere and slimkube makes here, so the pod worker has one place to ask:
- a pod being deleted (metadata.deletionTimestamp), or one whose API phase is already terminal
  (Succeeded/Failed: phases never go back), is killed whole and nothing is started (upstream: the pod
  worker's syncTerminatingPod → KillPod);
- running containers the decision code would otherwise never look at are killed with reason Unknown:
  an older instance still running beside the newest one of the same name (e.g. a kubelet killed between
  two starts), and a container whose name is in neither container list.

Probe results are keyed by Docker container id, as upstream's results managers are: a failed liveness
result of a container that was already replaced must not kill its successor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from control.api.typed.core import Pod
from nodeagent.runtime.spechash import container_hash
from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState, SandboxStatus


class RestartPolicy(str, Enum):
    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"


class KillReason(str, Enum):
    """Why a container is killed; upstream's containerKillReason plus the cases slimkube adds. The value is
    what the Killing event and the termination record carry."""

    SPEC_CHANGED = "SpecChanged"  # upstream leaves the reason empty and says it in the message
    LIVENESS = "LivenessProbe"
    STARTUP = "StartupProbe"
    UNKNOWN = "Unknown"  # a container in unknown state, or one the spec does not account for


@dataclass(frozen=True)
class ContainerToKill:
    name: str
    reason: KillReason
    message: str


@dataclass(frozen=True)
class PodActions:
    """Upstream's podActions. Invariants (the property tests check them):
    - a spec container with a running instance is started only if that instance is killed (by id in
      containers_to_kill, or with the whole pod);
    - containers_to_start is empty while an init container has not succeeded, and next_init_container is
      None once initialisation is done;
    - kill_pod without create_sandbox starts nothing."""

    kill_pod: bool = False
    create_sandbox: bool = False
    sandbox_id: str = ""  # the sandbox to keep using (or the one being replaced, for the event)
    attempt: int = 0  # the attempt number a new sandbox gets
    next_init_container: str | None = None
    init_failed: bool = False  # the last run of an init container failed (restart goes through back-off)
    containers_to_start: tuple[int, ...] = ()
    containers_to_kill: Mapping[str, ContainerToKill] = field(default_factory=dict)


def restart_policy(pod: Mapping[str, Any]) -> RestartPolicy:
    """spec.restartPolicy, Always when absent (the API default) or unrecognised."""
    try:
        return RestartPolicy(Pod(pod).spec.restart_policy or "Always")
    except ValueError:
        return RestartPolicy.ALWAYS


def should_restart_on_failure(pod: Mapping[str, Any]) -> bool:
    return restart_policy(pod) is not RestartPolicy.NEVER


def _containers(pod: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    spec = Pod(pod).spec
    items = spec.init_containers if key == "initContainers" else spec.containers
    return [c.raw for c in items if isinstance(c.raw, Mapping)]


def _host_network(pod: Mapping[str, Any]) -> bool:
    return Pod(pod).spec.host_network


def sandbox_changed(pod: Mapping[str, Any], status: PodStatus) -> tuple[bool, int, str]:
    """(create a new sandbox?, its attempt, the current sandbox's id) as upstream podSandboxChanged: no
    sandbox; more than one ready; the newest not ready; its network namespace mode differs from the spec's
    hostNetwork (id "" then: the old one cannot be reused); or a pod-network sandbox without an IP."""
    if not status.sandboxes:
        return True, 0, ""
    newest = _newest_sandbox(status.sandboxes)
    ready = sum(1 for s in status.sandboxes if s.state is SandboxState.READY)
    if ready > 1 or newest.state is not SandboxState.READY:
        return True, newest.attempt + 1, newest.id
    if newest.host_network != _host_network(pod):
        return True, newest.attempt + 1, ""
    if not newest.host_network and not newest.ip:
        return True, newest.attempt + 1, newest.id
    return False, newest.attempt, newest.id


def _newest_sandbox(sandboxes: tuple[SandboxStatus, ...]) -> SandboxStatus:
    return max(sandboxes, key=lambda s: (s.attempt, s.created_at.timestamp() if s.created_at else 0.0))


def container_succeeded(name: str, status: PodStatus) -> bool:
    latest = status.latest(name)
    return latest is not None and latest.state is ContainerState.EXITED and latest.exit_code == 0


def is_init_container_failed(latest: ContainerStatus) -> bool:
    """Upstream isInitContainerFailed: OOM-killed, exited non-zero, or in unknown state."""
    if latest.reason == "OOMKilled":
        return True
    if latest.state is ContainerState.EXITED and latest.exit_code != 0:
        return True
    return latest.state is ContainerState.UNKNOWN


def should_container_be_restarted(name: str, pod: Mapping[str, Any], status: PodStatus) -> bool:
    """Upstream ShouldContainerBeRestarted for a container that is not running: never started, created but
    not started, or unknown → yes; otherwise by restart policy (OnFailure: only after a non-zero exit)."""
    latest = status.latest(name)
    if latest is None or latest.state in (ContainerState.CREATED, ContainerState.UNKNOWN):
        return True
    if latest.state is ContainerState.RUNNING:
        return False
    policy = restart_policy(pod)
    if policy is RestartPolicy.NEVER:
        return False
    if policy is RestartPolicy.ON_FAILURE:
        return latest.exit_code != 0
    return True


@dataclass(frozen=True)
class InitProgress:
    """findNextInitContainerToRun's answer: `failed` is the last failed init container's status (then
    `next` names that same container), `next` what to run, `done` whether initialisation is over."""

    failed: ContainerStatus | None
    next: str | None
    done: bool


def next_init_container(pod: Mapping[str, Any], status: PodStatus) -> InitProgress:
    """Upstream findNextInitContainerToRun: done when there are none or an app container already runs
    (init containers may have been garbage-collected since); else the last failed one (to re-run);
    else after the last exited one; a running one means wait; nothing seen means the first."""
    inits = [c.get("name", "") for c in _containers(pod, "initContainers")]
    if not inits:
        return InitProgress(None, None, True)
    for app in _containers(pod, "containers"):
        latest = status.latest(app.get("name", ""))
        if latest is not None and latest.state is ContainerState.RUNNING:
            return InitProgress(None, None, True)
    for name in reversed(inits):
        latest = status.latest(name)
        if latest is not None and is_init_container_failed(latest):
            return InitProgress(latest, name, False)
    for index in range(len(inits) - 1, -1, -1):
        latest = status.latest(inits[index])
        if latest is None:
            continue
        if latest.state is ContainerState.RUNNING:
            return InitProgress(None, None, False)
        if latest.state is ContainerState.EXITED:
            if index == len(inits) - 1:
                return InitProgress(None, None, True)
            return InitProgress(None, inits[index + 1], False)
    return InitProgress(None, inits[0], False)


def _stray_containers(pod: Mapping[str, Any], status: PodStatus) -> dict[str, ContainerToKill]:
    """Running containers no decision below looks at: older instances and names the spec lacks."""
    names = {c.get("name", "") for key in ("initContainers", "containers") for c in _containers(pod, key)}
    strays: dict[str, ContainerToKill] = {}
    for running in status.running():
        if running.name not in names:
            message = f"Container {running.name} is not in the pod spec"
        elif (latest := status.latest(running.name)) is not None and latest.id != running.id:
            message = f"Container {running.name} has a newer instance {latest.id[:12]}"
        else:
            continue
        strays[running.id] = ContainerToKill(running.name, KillReason.UNKNOWN, message)
    return strays


def _being_deleted_or_terminal(pod: Mapping[str, Any]) -> bool:
    if Pod(pod).metadata.deletion_timestamp:
        return True
    return Pod(pod).status.phase in ("Succeeded", "Failed")


def compute_pod_actions(pod: Mapping[str, Any], status: PodStatus, *,
                        liveness_failed: frozenset[str] = frozenset(),
                        startup_failed: frozenset[str] = frozenset()) -> PodActions:
    """Decide one sync of `pod` given what the runtime holds (`status`) and the container ids whose
    liveness or startup probe currently reports failure."""
    create, attempt, sandbox_id = sandbox_changed(pod, status)
    if _being_deleted_or_terminal(pod):
        return PodActions(kill_pod=True, sandbox_id=sandbox_id, attempt=attempt)
    if create:
        return _new_sandbox_actions(pod, status, attempt, sandbox_id)

    to_kill = _stray_containers(pod, status)
    progress = next_init_container(pod, status)
    if not progress.done:
        return _init_actions(pod, progress, to_kill, sandbox_id, attempt)

    to_start: list[int] = []
    keep = 0
    restart_on_failure = should_restart_on_failure(pod)
    for index, container in enumerate(_containers(pod, "containers")):
        name = container.get("name", "")
        latest = status.latest(name)
        if latest is None or latest.state is not ContainerState.RUNNING:
            if should_container_be_restarted(name, pod, status):
                to_start.append(index)
                if latest is not None and latest.state is ContainerState.UNKNOWN:
                    to_kill[latest.id] = ContainerToKill(
                        name, KillReason.UNKNOWN, f"Container is in {latest.state.value!r} state, "
                                                  "try killing it before restart")
            continue
        if container_hash(container) != latest.hash:
            reason, message, restart = KillReason.SPEC_CHANGED, f"Container {name} definition changed", True
        elif latest.id in liveness_failed:
            reason, message = KillReason.LIVENESS, f"Container {name} failed liveness probe"
            restart = restart_on_failure
        elif latest.id in startup_failed:
            reason, message = KillReason.STARTUP, f"Container {name} failed startup probe"
            restart = restart_on_failure
        else:
            keep += 1
            continue
        if restart:
            message += ", will be restarted"
            to_start.append(index)
        to_kill[latest.id] = ContainerToKill(name, reason, message)

    if keep == 0 and not to_start:
        # Nothing runs and nothing will: stop the sandbox too (upstream KillPod=true).
        return PodActions(kill_pod=True, sandbox_id=sandbox_id, attempt=attempt)
    return PodActions(sandbox_id=sandbox_id, attempt=attempt, containers_to_start=tuple(to_start),
                      containers_to_kill=to_kill)


def _new_sandbox_actions(pod: Mapping[str, Any], status: PodStatus, attempt: int, sandbox_id: str) -> PodActions:
    """The sandbox must be (re)created: everything is killed; then either stop there (the pod is done) or
    start over from the first init container, or from the app containers still to run."""
    stop_only = PodActions(kill_pod=True, sandbox_id=sandbox_id, attempt=attempt)
    if not should_restart_on_failure(pod) and attempt != 0 and status.containers:
        # Never-restart pods that already ran: a lost sandbox ends them (upstream: no new sandbox).
        return stop_only
    policy = restart_policy(pod)
    to_start = tuple(index for index, c in enumerate(_containers(pod, "containers"))
                     if not (policy is RestartPolicy.ON_FAILURE and container_succeeded(c.get("name", ""), status)))
    if not to_start and next_init_container(pod, status).done:
        return stop_only
    start = PodActions(kill_pod=True, create_sandbox=True, sandbox_id=sandbox_id, attempt=attempt)
    inits = _containers(pod, "initContainers")
    if inits:
        return replace(start, next_init_container=inits[0].get("name", ""))
    return replace(start, containers_to_start=to_start)


def _init_actions(pod: Mapping[str, Any], progress: InitProgress, to_kill: dict[str, ContainerToKill],
                  sandbox_id: str, attempt: int) -> PodActions:
    """Initialisation is not done: run the next init container, or fail the pod (Never), or wait."""
    failed = progress.failed is not None
    if progress.next is None:  # an init container is running: wait for it
        return PodActions(sandbox_id=sandbox_id, attempt=attempt, containers_to_kill=to_kill)
    if failed and not should_restart_on_failure(pod):
        return PodActions(kill_pod=True, sandbox_id=sandbox_id, attempt=attempt, init_failed=True)
    if progress.failed is not None and progress.failed.state is ContainerState.UNKNOWN:
        to_kill[progress.failed.id] = ContainerToKill(
            progress.next, KillReason.UNKNOWN,
            f"Init container is in {progress.failed.state.value!r} state, try killing it before restart")
    return PodActions(sandbox_id=sandbox_id, attempt=attempt, next_init_container=progress.next,
                      init_failed=failed, containers_to_kill=to_kill)
