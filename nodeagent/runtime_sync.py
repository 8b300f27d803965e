"""Make the runtime match one pod: syncPod and killPod carry out `compute_pod_actions` against the runtime,
network and volumes. This is the sync layer of the runtime boundary: it turns the pod into the runtime's
CRI-shaped configs (runtime/sandbox_config.py, runtime/container_config.py, names and labels from
runtime/labels.py), so the runtime itself never sees an API object.

Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go SyncPod (numbered steps below) and KillPod /
killPodWithSyncResult, kuberuntime_container.go startContainer / killContainer / executePreStopHook,
pkg/kubelet/images (EnsureImageExists, through nodeagent.image_manager). Steps:

  1. kill the pod (every container, then the sandbox; network released) when the actions say so, and
     stop there unless a new sandbox follows (old init containers are then purged); otherwise kill
     `containers_to_kill`: preStop hook within the grace period, then stop with what is left of it
     (upstream's minimum of 2 s);
  2. create the sandbox: pause container, then the network (veth into the pause pid's netns, IP from
     IPAM), then the pod's hostPorts opened to that IP (network/hostport_manager.py; a clash with another
     pod fails the sandbox as upstream's kubenet SetUpPod does); a failure removes the sandbox again, and
     a sandbox's hostPorts close whenever its network is torn down;
  3. volumes and the pod's /etc/hosts and resolv.conf, whenever a container is to start (idempotent; a
     failure blocks every container, shown as ContainerCreating: upstream waits for volumes the same way);
  4. the next init container, through back-off when the previous run failed;
  5. app containers, each through the CrashLoopBackOff gate: image (pull policy, pull secrets;
     ErrImagePull, then ImagePullBackOff while the pull back-off runs; ErrImageNeverPull), environment
     (CreateContainerConfigError), mounts, termination-log file, Docker config, create
     (CreateContainerError), start (RunContainerError), and the postStart hook (a failure kills the
     container, as upstream: FailedPostStartHook).

Runtime calls raise only the interface's RuntimeFailure types and the network's NETWORK_ERRORS, so each
step catches exactly those; anything else is a bug and reaches the pod worker (which logs and retries).

Every step's outcome is collected in a `SyncResult`, never stopping at the first failed container, and
the waiting reason of each container that could not start (upstream's reasonCache) goes back to the pod
worker for the status. `retry_after` tells the worker when a back-off ends so it can sync again then.

Departures: a container that fails to *start* (Docker leaves it `created`) is put through the same
back-off as one that exited, so a bad command shows RunContainerError then CrashLoopBackOff instead of a
tight retry loop (upstream's doBackOff only looks at exited containers). Exited instances beyond the two
newest per container name are removed right after a successful start (upstream's container GC keeps one
dead container per name, MaxPerPodContainer=1; the status needs the newest for lastState).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from control.api.typed.core import Container, Pod
from control.util.iptables import IptablesError
from control.util.resolvconf import ResolvConf
from nodeagent.hooks import DEFAULT_POST_START_TIMEOUT, HookRunner
from nodeagent.image_manager import ImageManager
from nodeagent.network.hostport import HostportError
from nodeagent.network.manager import NETWORK_ERRORS
from nodeagent.network.podnet import PodInterface
from nodeagent.runtime import pod_files
from nodeagent.runtime.actions import KillReason, PodActions, compute_pod_actions
from nodeagent.runtime.backoff import Backoff, backoff_key
from nodeagent.runtime.container_config import build_container_config
from nodeagent.runtime.cri import PodSandboxConfig
from nodeagent.runtime.downward import NodeFacts
from nodeagent.runtime.env import CreateContainerConfigError, ObjectGetter, make_environment
from nodeagent.runtime.interface import Runtime, RuntimeFailure
from nodeagent.runtime.labels import grace_period
from nodeagent.runtime.sandbox_config import build_sandbox_config
from nodeagent.runtime.service_env import ServicesNotSynced
from nodeagent.runtime.spechash import container_hash
from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState
from nodeagent.volumes import pod_volumes
from nodeagent.volumes.mounts import container_mounts
from nodeagent.volumes.tokens import TokenManager

log = logging.getLogger(__name__)

# What one step of a sync may meet and record (then go on): the runtime's and the pod network's errors.
STEP_ERRORS: tuple[type[Exception], ...] = (*NETWORK_ERRORS, RuntimeFailure)
# Tearing a sandbox's network down also closes its hostPorts (iptables); opening them may clash.
TEARDOWN_ERRORS: tuple[type[Exception], ...] = (*STEP_ERRORS, IptablesError)
HOSTPORT_ERRORS: tuple[type[Exception], ...] = (*TEARDOWN_ERRORS, HostportError)
MIN_GRACE_SECONDS = 2.0  # upstream minimumGracePeriodInSeconds
# A pod whose volumes could not be set up (a claim not bound yet) is synced again this soon, as upstream's
# pod workers requeue a failed sync after a short back-off rather than the full sync period.
VOLUME_RETRY_SECONDS = 2.0
KEEP_PER_CONTAINER = 2  # instances kept per container name: the running one and the last dead one


class PodNetwork(Protocol):
    def attach(self, sandbox_id: str, pod: Mapping[str, Any], pid_or_netns_path: int | str) -> PodInterface: ...

    def detach(self, sandbox_id: str) -> str | None: ...


class Hostports(Protocol):
    """Opens a sandbox's hostPorts to its IP and closes them (network/hostport_manager.HostportManager)."""

    def add(self, sandbox_id: str, pod: Mapping[str, Any], ip: str) -> object: ...

    def remove(self, sandbox_id: str) -> object: ...


class Recorder(Protocol):
    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str, *,
              field_path: str | None = None) -> None: ...


@dataclass(frozen=True)
class StepResult:
    """One action of a sync (upstream SyncResult: action, target, error, message)."""

    action: str  # KillPod, KillContainer, CreatePodSandbox, SetupVolumes, InitContainer, StartContainer, ...
    target: str
    reason: str = ""  # "" = success
    message: str = ""

    @property
    def ok(self) -> bool:
        return not self.reason


@dataclass(frozen=True)
class SyncResult:
    actions: PodActions
    steps: tuple[StepResult, ...] = ()
    waiting: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # name → (reason, message)
    started: tuple[str, ...] = ()  # containers started by this sync: their old waiting reason is void
    retry_after: float | None = None  # seconds until a back-off ends

    @property
    def errors(self) -> tuple[StepResult, ...]:
        return tuple(step for step in self.steps if not step.ok)

    @property
    def started_any(self) -> bool:
        """A container or a sandbox was started: the runtime view changed and is worth a relist now."""
        return bool(self.started) or any(step.ok and step.action == "CreatePodSandbox" for step in self.steps)


def go_duration(seconds: float) -> str:
    """Go's time.Duration text for whole seconds, as upstream's back-off message prints it (1m20s)."""
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def pod_desc(pod: Mapping[str, Any]) -> str:
    """upstream format.Pod: name_namespace(uid)."""
    meta = Pod(pod).metadata
    return f"{meta.name}_{meta.namespace}({meta.uid})"


def _spec_containers(pod: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    spec = Pod(pod).spec
    return [c.raw for c in (spec.init_containers if key == "initContainers" else spec.containers)]


def _find_spec(pod: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for key in ("containers", "initContainers"):
        for container in _spec_containers(pod, key):
            if container.get("name") == name:
                return container
    return None


def _hooks(spec: Mapping[str, Any] | None) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """The container's (postStart, preStop) handlers as written, None where unset."""
    lifecycle = Container(spec).lifecycle
    if lifecycle is None:
        return None, None
    post_start, pre_stop = lifecycle.post_start, lifecycle.pre_stop
    return (None if post_start is None else post_start.raw), (None if pre_stop is None else pre_stop.raw)


def kill_grace(pod: Mapping[str, Any], override: float | None = None) -> float:
    """upstream killContainer: the override (deletion), else deletionGracePeriodSeconds, else the spec's."""
    if override is not None:
        return float(override)
    deletion_grace = Pod(pod).metadata.deletion_grace_period_seconds
    if deletion_grace is not None:
        return float(deletion_grace)
    return float(grace_period(pod))


def probe_kill_grace(pod: Mapping[str, Any], spec: Mapping[str, Any] | None, reason: KillReason) -> float:
    """upstream setTerminationGracePeriod: deletionGracePeriodSeconds first; a container killed for its
    liveness or startup probe gets that probe's terminationGracePeriodSeconds when set; else the pod's."""
    if Pod(pod).metadata.deletion_grace_period_seconds is None:
        container = Container(spec)
        probe = {KillReason.LIVENESS: container.liveness_probe, KillReason.STARTUP: container.startup_probe}.get(reason)
        if probe is not None and probe.termination_grace_period_seconds is not None:
            return float(probe.termination_grace_period_seconds)
    return kill_grace(pod)


_REFRESHABLE = ("configMap", "secret", "downwardAPI", "projected")


def _has_refreshable_volume(pod: Mapping[str, Any]) -> bool:
    """Whether a running pod has volumes whose files follow the API (upstream's volume manager remounts
    them on every sync): projected tokens are refreshed, ConfigMap and Secret contents updated."""
    return any(kind in volume.raw for volume in Pod(pod).spec.volumes for kind in _REFRESHABLE)


class RuntimeSyncer:
    """Carries out one pod's sync or kill. Safe to use from many pod workers at once: per-pod state lives
    in the runtime; the shared back-off tables are guarded by one lock."""

    def __init__(self, runtime: Runtime, network: PodNetwork, getter: ObjectGetter, *, pods_dir: str,
                 recorder: Recorder | None = None, hooks: HookRunner | None = None,
                 backoff: Backoff | None = None, image_backoff: Backoff | None = None,
                 node_facts: Callable[[], NodeFacts] = NodeFacts, extra_labels: Mapping[str, str] | None = None,
                 hostports: Hostports | None = None,
                 service_env: Callable[[Mapping[str, Any]], Mapping[str, str]] | None = None,
                 dns: pod_files.DNSSettings = pod_files.NO_CLUSTER_DNS,
                 tokens: TokenManager | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.runtime = runtime
        self.network = network
        self.getter = getter
        self.pods_dir = pods_dir
        self.recorder = recorder
        self.hooks = HookRunner(runtime) if hooks is None else hooks
        # `is None`, not `or`: an empty Backoff is falsy (it has __len__)
        self.backoff = Backoff() if backoff is None else backoff
        self.images = ImageManager(runtime, getter, Backoff(initial=self.backoff.initial, maximum=self.backoff.maximum)
                                   if image_backoff is None else image_backoff, clock=clock)
        self.node_facts = node_facts
        self.extra_labels = dict(extra_labels or {})
        self.hostports = hostports
        # pod → its Service variables (service_env.py); raises ServicesNotSynced before the first list
        self.service_env = service_env
        self.dns = dns  # the pods' resolv.conf and hosts file (pod_files.py)
        self.tokens = tokens  # service account tokens of projected volumes (volumes/tokens.py)
        self.clock = clock
        self._lock = threading.Lock()

    def gc_backoff(self) -> None:
        """Forget back-off entries idle for 2 × max and expired tokens (housekeeping)."""
        now = self.clock()
        with self._lock:
            self.backoff.gc(now)
        self.images.gc()
        if self.tokens is not None:
            self.tokens.cleanup()

    # ---- events ----

    def _event(self, pod: Mapping[str, Any], type: str, reason: str, message: str, container: str = "") -> None:
        if self.recorder is None:
            return
        meta = pod.get("metadata") or {}
        ref = {"kind": "Pod", "apiVersion": "v1", "name": meta.get("name", ""),
               "namespace": meta.get("namespace", ""), "uid": meta.get("uid", "")}
        field_path = f"spec.containers{{{container}}}" if container else None
        try:
            self.recorder.event(ref, type, reason, message, field_path=field_path)
        except Exception:
            log.exception("recording event %s for %s failed", reason, pod_desc(pod))

    # ---- syncPod ----

    def sync_pod(self, pod: Mapping[str, Any], status: PodStatus, *, liveness_failed: frozenset[str] = frozenset(),
                 startup_failed: frozenset[str] = frozenset()) -> SyncResult:
        """One sync; `liveness_failed`/`startup_failed` are the container ids the prober says failed."""
        actions = compute_pod_actions(pod, status, liveness_failed=liveness_failed, startup_failed=startup_failed)
        if actions != PodActions(sandbox_id=actions.sandbox_id, attempt=actions.attempt):
            log.debug("pod %s: %s", pod_desc(pod), actions)
        steps: list[StepResult] = []
        waiting: dict[str, tuple[str, str]] = {}
        started: list[str] = []
        retry: list[float] = []

        # Step 1: kill the pod, or the containers that must go.
        if actions.kill_pod:
            steps += self.kill_pod(pod, status)
            if actions.create_sandbox:
                steps += self._purge_init_containers(pod, status)
            else:
                return SyncResult(actions, tuple(steps))
        else:
            steps += self._kill_containers(pod, status, actions)

        # Step 2: a new sandbox, wired into the pod network.
        sandbox_id = actions.sandbox_id
        pod_ips = list(status.ips)
        if not actions.create_sandbox and actions.next_init_container is None and not actions.containers_to_start:
            if _has_refreshable_volume(pod) and status.sandboxes:
                # tokens near expiry, changed ConfigMaps and Secrets (the pod files are its containers' already)
                self._setup_volumes(pod, pod_ips, steps, pod_files_too=False)
            return SyncResult(actions, tuple(steps))
        sandbox_config = self.sandbox_config(pod, actions.attempt)
        if actions.create_sandbox:
            created = self._create_sandbox(pod, sandbox_config, steps)
            if created is None:
                return SyncResult(actions, tuple(steps))
            sandbox_id, pod_ips = created
            self._remove_old_sandboxes(status, keep=sandbox_id)
        if actions.next_init_container is None and not actions.containers_to_start:
            return SyncResult(actions, tuple(steps))

        # Step 3: volumes and the pod's managed files.
        volumes = self._setup_volumes(pod, pod_ips, steps)
        if volumes is None:
            names = [actions.next_init_container] if actions.next_init_container else \
                [_spec_containers(pod, "containers")[i].get("name", "") for i in actions.containers_to_start]
            for name in names:
                waiting[name] = ("ContainerCreating", steps[-1].message)
            return SyncResult(actions, tuple(steps), waiting, retry_after=VOLUME_RETRY_SECONDS)

        # Step 4: the next init container; Step 5: the app containers.
        todo: list[tuple[str, Mapping[str, Any]]] = []
        if actions.next_init_container:
            spec = _find_spec(pod, actions.next_init_container)
            if spec is not None:
                todo.append(("InitContainer", spec))
        else:
            containers = _spec_containers(pod, "containers")
            todo += [("StartContainer", containers[i]) for i in actions.containers_to_start]
        for action, spec in todo:
            name = spec.get("name", "")
            wait = self._backoff_wait(pod, spec, status)
            if wait is not None:
                seconds, message = wait
                waiting[name] = ("CrashLoopBackOff", message)
                steps.append(StepResult(action, name, "CrashLoopBackOff", message))
                retry.append(seconds)
                continue
            step = self._start_container(pod, spec, status, sandbox_id=sandbox_id, sandbox_config=sandbox_config,
                                         pod_ips=pod_ips, volumes=volumes, action=action)
            steps.append(step)
            if step.ok:
                started.append(name)
                self._gc_container_instances(status, name)
            else:
                waiting[name] = (step.reason, step.message)
                if step.reason in ("ErrImagePull", "ImagePullBackOff"):
                    retry.append(self.images.retry_after(Pod(pod).metadata.uid,
                                                         spec.get("image", "")))
                elif step.reason == "RunContainerError":
                    retry.append(self._start_retry(pod, spec))
        return SyncResult(actions, tuple(steps), waiting, tuple(started), min(retry) if retry else None)

    # ---- step helpers ----

    def _kill_containers(self, pod: Mapping[str, Any], status: PodStatus, actions: PodActions) -> list[StepResult]:
        by_id = {c.id: c for c in status.containers}
        jobs = [(by_id[cid], kill.message) for cid, kill in actions.containers_to_kill.items() if cid in by_id]
        graces = {cid: probe_kill_grace(pod, _find_spec(pod, kill.name), kill.reason)
                  for cid, kill in actions.containers_to_kill.items()}
        return self._parallel_kill(pod, jobs, grace=None, graces=graces)

    def sandbox_config(self, pod: Mapping[str, Any], attempt: int) -> PodSandboxConfig:
        """The pod's sandbox as the runtime is to run it (upstream generatePodSandboxConfig), also needed to
        create its containers."""
        try:
            dns: ResolvConf | None = pod_files.pod_dns_config(pod, pod_files.node_resolv_conf(self.dns), self.dns)[0]
        except OSError:  # the pod's resolv.conf write reports this when a container is to start
            dns = None
        return build_sandbox_config(pod, attempt=attempt, extra_labels=self.extra_labels, dns=dns)

    def _create_sandbox(self, pod: Mapping[str, Any], config: PodSandboxConfig,
                        steps: list[StepResult]) -> tuple[str, list[str]] | None:
        uid = config.metadata.uid
        host_network = config.linux.host_network
        try:
            sandbox_id = self.runtime.run_sandbox(config)
        except (RuntimeFailure, OSError) as exc:
            message = f"Failed to create pod sandbox: {exc}"
            steps.append(StepResult("CreatePodSandbox", uid, "CreatePodSandboxError", message))
            self._event(pod, "Warning", "FailedCreatePodSandBox", message)
            return None
        pod_ips: list[str] = []
        if host_network:
            pod_ips = list(self.node_facts().host_ips)
        else:
            try:
                interface = self.network.attach(sandbox_id, pod, self.runtime.sandbox_pid(sandbox_id))
                pod_ips = [interface.ip]
            except STEP_ERRORS as exc:  # netlink, IPAM exhaustion, a sandbox that died
                message = f"Failed to set up the network of sandbox {sandbox_id[:12]}: {exc}"
                steps.append(StepResult("CreatePodSandbox", uid, "CreatePodSandboxError", message))
                self._event(pod, "Warning", "FailedCreatePodSandBox", message)
                self._remove_sandbox(sandbox_id, detach=False)
                return None
            if self.hostports is not None:
                try:
                    self.hostports.add(sandbox_id, pod, interface.ip)
                except HOSTPORT_ERRORS as exc:
                    message = f"Failed to open the hostPorts of sandbox {sandbox_id[:12]}: {exc}"
                    steps.append(StepResult("CreatePodSandbox", uid, "CreatePodSandboxError", message))
                    self._event(pod, "Warning", "FailedCreatePodSandBox", message)
                    self._remove_sandbox(sandbox_id)
                    return None
        steps.append(StepResult("CreatePodSandbox", uid))
        return sandbox_id, pod_ips

    def _close_hostports(self, sandbox_id: str) -> None:
        if self.hostports is not None:
            self.hostports.remove(sandbox_id)

    def _remove_sandbox(self, sandbox_id: str, *, detach: bool = True) -> None:
        for action in ((lambda: self._close_hostports(sandbox_id)) if detach else None,
                       (lambda: self.network.detach(sandbox_id)) if detach else None,
                       lambda: self.runtime.stop_sandbox(sandbox_id),
                       lambda: self.runtime.remove_sandbox(sandbox_id)):
            if action is None:
                continue
            try:
                action()
            except TEARDOWN_ERRORS:  # keep going: the next sync or the pod's removal retries
                log.exception("removing sandbox %s", sandbox_id[:12])

    def _remove_old_sandboxes(self, status: PodStatus, *, keep: str) -> None:
        """The sandboxes replaced by `keep` (already stopped and detached by step 1) are removed."""
        for sandbox in status.sandboxes:
            if sandbox.id != keep:
                self._remove_sandbox(sandbox.id, detach=False)

    def _purge_init_containers(self, pod: Mapping[str, Any], status: PodStatus) -> list[StepResult]:
        """A new sandbox starts initialisation over: the old init containers go (upstream purgeInitContainers).
        App containers' dead instances stay: they carry the restart count and lastState."""
        inits = {c.get("name", "") for c in _spec_containers(pod, "initContainers")}
        steps = []
        for container in status.containers:
            if container.name not in inits or container.state is ContainerState.RUNNING:
                continue
            try:
                self.runtime.remove_container(container.id)
            except RuntimeFailure as exc:
                steps.append(StepResult("RemoveContainer", container.name, "RemoveContainerError", str(exc)))
        return steps

    def _setup_volumes(self, pod: Mapping[str, Any], pod_ips: Sequence[str], steps: list[StepResult], *,
                       pod_files_too: bool = True) -> dict[str, pod_volumes.VolumeInfo] | None:
        """The pod's volumes (and, before containers are created, its etc-hosts and resolv.conf); None
        after a FailedMount step and event."""
        uid = Pod(pod).metadata.uid
        directory = pod_volumes.pod_dir(self.pods_dir, uid)
        try:
            volumes = pod_volumes.setup(pod, self.getter, pods_dir=self.pods_dir, pod_ips=pod_ips,
                                        node=self.node_facts(), tokens=self.tokens)
            if pod_files_too:
                for reason, message in pod_files.write_pod_files(directory, pod, pod_ips, dns=self.dns):
                    self._event(pod, "Warning", reason, message)
        except (pod_volumes.VolumeError, OSError) as exc:
            steps.append(StepResult("SetupVolumes", uid, "FailedMount", str(exc)))
            self._event(pod, "Warning", "FailedMount", str(exc))
            return None
        return volumes

    def _backoff_wait(self, pod: Mapping[str, Any], spec: Mapping[str, Any],
                      status: PodStatus) -> tuple[float, str] | None:
        """upstream doBackOff: (seconds left, message) while the container's restart back-off runs."""
        latest = status.latest(spec.get("name", ""))
        if latest is None or latest.state is ContainerState.RUNNING:
            return None
        key = backoff_key(Pod(pod).metadata.uid, spec.get("name", ""), container_hash(spec))
        now = self.clock()
        with self._lock:
            if latest.state is ContainerState.EXITED and latest.finished_at is not None:
                remaining = self.backoff.admit(key, finished_at=latest.finished_at.timestamp(), now=now)
            else:  # never started (RunContainerError): the failure was recorded when the start failed
                remaining = self.backoff.remaining(key, now)
            current = self.backoff.get(key)
        if remaining <= 0:
            return None
        message = f"back-off {go_duration(current)} restarting failed container={spec.get('name', '')} " \
                  f"pod={pod_desc(pod)}"
        self._event(pod, "Warning", "BackOff", f"Back-off restarting failed container {spec.get('name', '')} in "
                                                f"pod {pod_desc(pod)}", spec.get("name", ""))
        return remaining, message

    def _start_retry(self, pod: Mapping[str, Any], spec: Mapping[str, Any]) -> float:
        key = backoff_key(Pod(pod).metadata.uid, spec.get("name", ""), container_hash(spec))
        with self._lock:
            return self.backoff.remaining(key, self.clock()) or self.backoff.initial

    def _start_container(self, pod: Mapping[str, Any], spec: Mapping[str, Any], status: PodStatus, *,
                         sandbox_id: str, sandbox_config: PodSandboxConfig, pod_ips: Sequence[str],
                         volumes: Mapping[str, pod_volumes.VolumeInfo], action: str) -> StepResult:
        """upstream startContainer: image, config, create, start, postStart."""
        name = spec.get("name", "")
        latest = status.latest(name)
        attempt = latest.restart_count + 1 if latest is not None else 0
        uid = Pod(pod).metadata.uid
        try:
            self.images.ensure_image_exists(pod, spec, lambda kind, reason, message:
                                            self._event(pod, kind, reason, message, name))
        except RuntimeFailure as exc:
            self._event(pod, "Warning", "Failed", f"Error: {exc.reason}", name)
            return StepResult(action, name, exc.reason, str(exc))
        try:
            services = self.service_env(pod) if self.service_env is not None else None
            env = make_environment(pod, spec, self.getter, pod_ips=pod_ips, node=self.node_facts(),
                                   service_env=services)
            mounts = container_mounts(spec, volumes, env=env.as_dict())
            directory = str(pod_volumes.pod_dir(self.pods_dir, uid))
            pod_files.ensure_termination_log(directory, name, attempt)
            config = build_container_config(pod, spec, env=env.variables, mounts=mounts.binds, tmpfs=mounts.tmpfs,
                                            image=spec.get("image", ""), pod_dir=directory, attempt=attempt,
                                            pod_ips=pod_ips, extra_labels=self.extra_labels)
        except (CreateContainerConfigError, ServicesNotSynced, pod_volumes.VolumeError, ValueError, OSError) as exc:
            self._event(pod, "Warning", "Failed", f"Error: {exc}", name)
            return StepResult(action, name, CreateContainerConfigError.reason, str(exc))
        try:
            container_id = self.runtime.create_container(sandbox_id, config, sandbox_config)
        except RuntimeFailure as exc:
            self._event(pod, "Warning", "Failed", f"Error: {exc}", name)
            return StepResult(action, name, exc.reason, str(exc))
        self._event(pod, "Normal", "Created", f"Created container {name}", name)
        try:
            self.runtime.start_container(container_id)
        except RuntimeFailure as exc:
            with self._lock:  # see the module notes: a failed start goes through back-off too
                self.backoff.next(backoff_key(uid, name, container_hash(spec)), self.clock())
            self._event(pod, "Warning", "Failed", f"Error: {exc}", name)
            return StepResult(action, name, exc.reason, str(exc))
        self._event(pod, "Normal", "Started", f"Started container {name}", name)
        handler = _hooks(spec)[0]
        if handler:
            failure = self.hooks.run("PostStart", handler, pod=pod, container=spec, container_id=container_id,
                                     pod_ip=pod_ips[0] if pod_ips else "", timeout=DEFAULT_POST_START_TIMEOUT)
            if failure is not None:
                self._event(pod, "Warning", "FailedPostStartHook", failure, name)
                self._stop(pod, container_id, name, kill_grace(pod), "FailedPostStartHook")
                return StepResult(action, name, "PostStartHookError", failure)
        return StepResult(action, name)

    def _gc_container_instances(self, status: PodStatus, name: str) -> None:
        """Keep the newest dead instance per name (with the one just started, two); remove the rest."""
        dead = [c for c in status.containers if c.name == name and c.state is not ContainerState.RUNNING]
        dead.sort(key=lambda c: c.restart_count, reverse=True)
        for container in dead[KEEP_PER_CONTAINER - 1:]:
            try:
                self.runtime.remove_container(container.id)
            except RuntimeFailure:
                log.exception("removing old container %s", container.id[:12])

    # ---- killPod ----

    def kill_pod(self, pod: Mapping[str, Any], status: PodStatus, *, grace: float | None = None,
                 remove: bool = False) -> list[StepResult]:
        """upstream KillPod: every running container (preStop, then stop within the grace period, all at
        once), then the sandboxes stopped and their network released. With `remove` (the pod is gone for
        good) the containers and sandboxes are removed too and the pod's directory torn down."""
        uid = Pod(pod).metadata.uid or status.uid
        jobs = [(c, "Stopping container " + c.name) for c in status.containers
                if c.state in (ContainerState.RUNNING, ContainerState.UNKNOWN)]
        steps = self._parallel_kill(pod, jobs, grace=grace)
        for sandbox in status.sandboxes:
            try:
                if not sandbox.host_network:
                    self._close_hostports(sandbox.id)
                    self.network.detach(sandbox.id)
                if sandbox.state is SandboxState.READY:
                    self.runtime.stop_sandbox(sandbox.id)
                steps.append(StepResult("KillPodSandbox", sandbox.id))
            except TEARDOWN_ERRORS as exc:
                steps.append(StepResult("KillPodSandbox", sandbox.id, "KillPodSandboxError", str(exc)))
        if remove and not any(not s.ok for s in steps):
            steps += self._remove_all(uid, status)
        return steps

    def _remove_all(self, uid: str, status: PodStatus) -> list[StepResult]:
        steps = []
        for container in status.containers:
            try:
                self.runtime.remove_container(container.id)
            except RuntimeFailure as exc:
                steps.append(StepResult("RemoveContainer", container.name, "RemoveContainerError", str(exc)))
        for sandbox in status.sandboxes:
            try:
                self.runtime.remove_sandbox(sandbox.id)
            except RuntimeFailure as exc:
                steps.append(StepResult("RemovePodSandbox", sandbox.id, "RemovePodSandboxError", str(exc)))
        if self.tokens is not None:
            self.tokens.forget(uid)
        try:
            pod_volumes.teardown(self.pods_dir, uid)
        except (OSError, ValueError) as exc:
            steps.append(StepResult("TeardownVolumes", uid, "TeardownVolumesError", str(exc)))
        return steps

    def _parallel_kill(self, pod: Mapping[str, Any], jobs: Sequence[tuple[ContainerStatus, str]],
                       *, grace: float | None, graces: Mapping[str, float] | None = None) -> list[StepResult]:
        """upstream killContainersWithSyncResult: one thread per container, all waited for; `graces` by
        container id overrides the pod's grace period (a probe's terminationGracePeriodSeconds)."""
        results: list[StepResult] = []
        seconds = kill_grace(pod, grace)
        per_container = dict(graces or {})

        def kill(container: ContainerStatus, message: str) -> None:
            results.append(self.kill_container(pod, container, grace=per_container.get(container.id, seconds),
                                               message=message))

        threads = [threading.Thread(target=kill, args=job, name=f"kill-{job[0].id[:12]}", daemon=True)
                   for job in jobs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    def kill_container(self, pod: Mapping[str, Any], container: ContainerStatus, *, grace: float,
                       message: str = "") -> StepResult:
        """upstream killContainer: the preStop hook within `grace`, then stop with the rest (≥ 2 s)."""
        spec = _find_spec(pod, container.name)
        handler = _hooks(spec)[1]
        started = time.monotonic()
        if handler and container.state is ContainerState.RUNNING:
            ips = Pod(pod).status.pod_ip
            failure = self.hooks.run("PreStop", handler, pod=pod, container=spec or {}, container_id=container.id,
                                     pod_ip=ips, timeout=max(grace, MIN_GRACE_SECONDS))
            if failure is not None:
                self._event(pod, "Warning", "FailedPreStopHook", failure, container.name)
        remaining = max(grace - (time.monotonic() - started), MIN_GRACE_SECONDS) if grace > 0 else 0.0
        return self._stop(pod, container.id, container.name, remaining,
                          message or f"Stopping container {container.name}")

    def _stop(self, pod: Mapping[str, Any], container_id: str, name: str, grace: float, message: str) -> StepResult:
        self._event(pod, "Normal", "Killing", message, name)
        try:
            self.runtime.stop_container(container_id, grace)
        except RuntimeFailure as exc:
            return StepResult("KillContainer", name, "KillContainerError", str(exc))
        return StepResult("KillContainer", name)

