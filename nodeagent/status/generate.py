"""The pod's API `status` from what the runtime holds: upstream generateAPIPodStatus.

Follows pkg/kubelet/kubelet_pods.go (generateAPIPodStatus, convertStatusToAPIStatus,
convertToAPIContainerStatuses, getPhase), pkg/kubelet/status/generate.go (GeneratePodInitializedCondition,
GenerateContainersReadyCondition, GeneratePodReadyCondition), the prober manager's UpdatePodStatus (ready
and started per container) and the status manager's lastTransitionTime rule (kept while a condition's
status is unchanged).

Pure: the pod (its `status` is the previous one, as the status manager last wrote it), the runtime's
PodStatus, readiness/startup results by container name, the reasons containers could not start
(CrashLoopBackOff, ErrImagePull, ...; upstream's reasonCache), the node's IPs and `now` come in; a new
status dict comes out. `status_changed` tells the status manager whether a PATCH is needed.

Choices where upstream leans on state slimkube passes differently:
- readiness and startup: a running container with no entry in `ready`/`started` is ready/started when its
  spec has no readinessProbe/startupProbe, not ready/started when it has one (the prober's default until
  its first result);
- podIP/podIPs: the runtime's IPs, else the newest ready sandbox's; when the runtime has none (sandbox
  gone) the previous ones are kept, so a finished pod still says which IP it had; hostNetwork pods use
  the node's IPs;
- no ephemeral containers, resize status or PodReadyToStartContainers condition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from control.api.qos import qos_class
from control.api.typed.core import ContainerStatus as ContainerStatusView
from control.api.typed.core import Pod
from control.apimachinery.meta import deep_copy, format_timestamp
from nodeagent.runtime.actions import should_container_be_restarted
from nodeagent.runtime.types import ContainerState, ContainerStatus, PodStatus, SandboxState

KUBELET_CONDITIONS = ("Initialized", "Ready", "ContainersReady", "PodScheduled")
TERMINAL_PHASES = ("Succeeded", "Failed")


def _ts(moment: datetime | None) -> str | None:
    return format_timestamp(moment) if moment is not None else None


def _container_id(cid: str) -> str:
    return f"docker://{cid}" if cid else ""


def _image_id(image_id: str) -> str:
    """Docker's bare image id gets the dockershim's `docker://` prefix; repo digests come prefixed."""
    return f"docker://{image_id}" if image_id.startswith("sha256:") else image_id


def _convert(cs: ContainerStatus, old: Mapping[str, Any] | None) -> dict[str, Any]:
    """One runtime container as an API containerStatus (upstream convertContainerStatus)."""
    status: dict[str, Any] = {"name": cs.name, "restartCount": cs.restart_count, "image": cs.image,
                              "imageID": _image_id(cs.image_id), "containerID": _container_id(cs.id)}
    if cs.state is ContainerState.RUNNING:
        status["state"] = {"running": {"startedAt": _ts(cs.started_at)}}
    elif cs.state is ContainerState.EXITED:
        terminated = {"exitCode": cs.exit_code, "reason": cs.reason, "message": cs.message,
                      "startedAt": _ts(cs.started_at), "finishedAt": _ts(cs.finished_at),
                      "containerID": _container_id(cs.id)}
        # Unset strings and times are left out, as the API's omitempty does (exitCode 0 stays).
        status["state"] = {"terminated": {k: v for k, v in terminated.items() if v not in (None, "")}}
    elif cs.state is ContainerState.UNKNOWN and old is not None and old.get("containerID") == status["containerID"] \
            and _ran(ContainerStatusView(old)):
        # It ran and is gone without a record: not "never ran", which would make run-once pods run twice.
        # Matched by container id (upstream matches by name only, so an older instance or the next
        # generation flips between waiting and terminated); kept once said, so the status stays put.
        if "terminated" in old["state"]:
            status["state"] = deep_copy(dict(old["state"]))
            status["restartCount"] = int(old.get("restartCount") or 0)
        else:
            status["state"] = {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
                                              "message": "The container could not be located when the pod "
                                                         "was terminated"}}
            status["restartCount"] = int(old.get("restartCount") or 0) + 1
    else:  # created but not started, or unknown: waiting to run
        status["state"] = {"waiting": {}}
    return status


def _ran(status: ContainerStatusView) -> bool:
    """The container has run: it is running or has terminated."""
    return status.state.running is not None or status.state.terminated is not None


def _newest_first(runtime: PodStatus) -> list[ContainerStatus]:
    return sorted(runtime.containers, reverse=True,
                  key=lambda c: (c.restart_count, c.created_at.timestamp() if c.created_at else 0.0))


def _container_statuses(pod: Mapping[str, Any], runtime: PodStatus, specs: Sequence[Mapping[str, Any]],
                        previous: Sequence[Any], *, has_inits: bool, is_init: bool,
                        waiting_reasons: Mapping[str, tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """upstream convertToAPIContainerStatuses, by name in spec order (ready/started are set later)."""
    olds = {s["name"]: s for s in previous if isinstance(s, Mapping) and "name" in s}
    default_reason = "PodInitializing" if has_inits else "ContainerCreating"
    statuses: dict[str, dict[str, Any]] = {}
    for spec in specs:
        name = spec.get("name", "")
        old = olds.get(name)
        if old is not None and ContainerStatusView(old).state.terminated is not None:
            statuses[name] = deep_copy(dict(old))
            continue
        status: dict[str, Any] = {"name": name, "image": spec.get("image", ""), "imageID": "",
                                  "state": {"waiting": {"reason": default_reason}}, "restartCount": 0}
        if old is not None:
            status["restartCount"] = int(old.get("restartCount") or 0)
            if old.get("lastState"):
                status["lastState"] = deep_copy(old["lastState"])
            if ContainerStatusView(old).state.running is not None and runtime.latest(name) is None \
                    and not ContainerStatusView(status).last_state.terminated:
                # It used to run and the runtime lost it: say it stopped, or the pod would fall back to Pending.
                status["lastState"] = {"terminated": {
                    "exitCode": 137, "reason": "ContainerStatusUnknown",
                    "message": "The container could not be located when the pod was deleted.  "
                               "The container used to be Running"}}
                if not Pod(pod).metadata.deletion_timestamp:
                    status["restartCount"] += 1
        statuses[name] = status

    seen: dict[str, int] = {}
    for cs in _newest_first(runtime):
        if cs.name not in statuses or seen.get(cs.name, 0) >= 2:
            continue
        converted = _convert(cs, olds.get(cs.name))
        if seen.get(cs.name, 0) == 0:
            statuses[cs.name] = converted
        else:
            statuses[cs.name]["lastState"] = converted["state"]
        seen[cs.name] = seen.get(cs.name, 0) + 1

    for spec in specs:
        name = spec.get("name", "")
        latest = runtime.latest(name)
        if is_init and latest is not None and latest.state is ContainerState.EXITED and latest.exit_code == 0:
            continue
        if name not in waiting_reasons or not should_container_be_restarted(name, pod, runtime):
            continue
        status = statuses[name]
        if "terminated" in status["state"]:
            status["lastState"] = status["state"]
        reason, message = waiting_reasons[name]
        status["state"] = {"waiting": {"reason": reason, "message": message} if message else {"reason": reason}}
    return statuses


def _set_probe_fields(statuses: dict[str, dict[str, Any]], specs: Sequence[Mapping[str, Any]], *, is_init: bool,
                      ready: Mapping[str, bool], started: Mapping[str, bool]) -> None:
    """The prober manager's UpdatePodStatus: init containers are ready once they exited 0; app containers
    are ready/started only while running, then as their probes say."""
    for spec in specs:
        status = statuses[spec.get("name", "")]
        state = status["state"]
        if is_init:
            status["ready"] = "terminated" in state and state["terminated"].get("exitCode") == 0
            status["started"] = "running" in state
            continue
        running = "running" in state
        status["started"] = running and started.get(spec["name"], not spec.get("startupProbe"))
        status["ready"] = bool(status["started"]) and ready.get(spec["name"], not spec.get("readinessProbe"))


def get_phase(pod: Mapping[str, Any], init_statuses: Sequence[Mapping[str, Any]],
              statuses: Sequence[Mapping[str, Any]]) -> str:
    """upstream getPhase from the API container statuses (without the restartable-init branch)."""
    spec = Pod(pod).spec
    policy = spec.restart_policy or "Always"
    by_name = {s["name"]: ContainerStatusView(s) for s in (*init_statuses, *statuses)}
    pending_init = failed_init = 0
    for container in spec.init_containers:
        status = by_name.get(container.name)
        if status is None or status.state.running is not None:
            pending_init += 1
        elif (terminated := status.state.terminated) is not None:
            failed_init += terminated.exit_code != 0
        elif status.state.waiting is not None and (last := status.last_state.terminated) is not None:
            failed_init += last.exit_code != 0
        else:
            pending_init += 1
    unknown = running = waiting = stopped = succeeded = 0
    for container in spec.containers:
        status = by_name.get(container.name)
        if status is None:
            unknown += 1
        elif status.state.running is not None:
            running += 1
        elif (terminated := status.state.terminated) is not None:
            stopped += 1
            succeeded += terminated.exit_code == 0
        elif status.state.waiting is not None:
            if status.last_state.terminated is not None:
                stopped += 1
            else:
                waiting += 1
        else:
            unknown += 1
    # upstream HasAnyRegularContainerStarted: init containers gone or restarting do not make a started pod
    # Pending again.
    started = any((status := by_name.get(c.name)) is not None and _ran(status) for c in spec.containers)
    if failed_init and policy == "Never":
        return "Failed"
    if (pending_init and not started) or waiting:
        return "Pending"
    if running and not unknown:
        return "Running"
    if not running and stopped and not unknown:
        if policy == "Always":
            return "Running"  # everything is restarting
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"
    return "Pending"


def _condition(kind: str, ok: bool, reason: str = "", message: str = "") -> dict[str, Any]:
    condition: dict[str, Any] = {"type": kind, "status": "True" if ok else "False"}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _names(items: Sequence[str]) -> str:
    return "[" + " ".join(items) + "]"


def _initialized(pod: Mapping[str, Any], inits: dict[str, dict[str, Any]], apps: dict[str, dict[str, Any]],
                 phase: str) -> dict[str, Any]:
    """GeneratePodInitializedCondition: true without init containers, once every one exited 0, or once an
    app container has started (init containers may have been removed since)."""
    if not inits:
        return _condition("Initialized", True)
    if any("waiting" not in s["state"] or ContainerStatusView(s).last_state.terminated for s in apps.values()):
        return _condition("Initialized", True)
    incomplete = [name for name, s in inits.items() if not s.get("ready")]
    if not incomplete:
        return _condition("Initialized", True, "PodCompleted" if phase == "Succeeded" else "")
    return _condition("Initialized", False, "ContainersNotInitialized",
                      f"containers with incomplete status: {_names(incomplete)}")


def _containers_ready(apps: dict[str, dict[str, Any]], phase: str) -> dict[str, Any]:
    """GenerateContainersReadyCondition: a terminal pod is never ready — upstream (1.27+) says so explicitly for
    Failed too, since its containers may still be terminating (reasons PodCompleted / PodFailed)."""
    if phase in TERMINAL_PHASES:
        return _condition("ContainersReady", False, "PodCompleted" if phase == "Succeeded" else "PodFailed")
    unready = [name for name, s in apps.items() if not s.get("ready")]
    if unready:
        return _condition("ContainersReady", False, "ContainersNotReady",
                          f"containers with unready status: {_names(unready)}")
    return _condition("ContainersReady", True)


def _ready(pod: Mapping[str, Any], containers_ready: dict[str, Any],
           others: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """GeneratePodReadyCondition: ContainersReady, then every spec.readinessGates condition True."""
    if containers_ready["status"] != "True":
        return {**containers_ready, "type": "Ready"}
    by_type = {c.get("type"): c for c in others}
    for gate in Pod(pod).spec.readiness_gates:
        kind = gate.condition_type
        condition = by_type.get(kind)
        if condition is None:
            return _condition("Ready", False, "ReadinessGatesNotReady",
                              f'corresponding condition of pod readiness gate "{kind}" does not exist.')
        if condition.get("status") != "True":
            return _condition("Ready", False, "ReadinessGatesNotReady",
                              f'the status of pod readiness gate "{kind}" is not "True", '
                              f'but {condition.get("status")}')
    return _condition("Ready", True)


def _stamp(conditions: list[dict[str, Any]], old: Sequence[Any], now: datetime) -> None:
    """lastTransitionTime stays while the status stays (upstream status manager updateLastTransitionTime)."""
    olds = {c.get("type"): c for c in old if isinstance(c, Mapping)}
    for condition in conditions:
        previous = olds.get(condition["type"])
        if previous is not None and previous.get("status") == condition["status"] \
                and previous.get("lastTransitionTime"):
            condition["lastTransitionTime"] = previous["lastTransitionTime"]
        else:
            condition["lastTransitionTime"] = format_timestamp(now)
        condition["lastProbeTime"] = None


def _pod_ips(pod: Mapping[str, Any], runtime: PodStatus, old: Mapping[str, Any], host_ips: Sequence[str]) -> list[str]:
    if Pod(pod).spec.host_network:
        return [ip for ip in host_ips if ip]
    ips = [ip for ip in runtime.ips if ip]
    if not ips:
        ready = [s for s in runtime.sandboxes if s.state is SandboxState.READY and s.ip]
        ips = [max(ready, key=lambda s: s.attempt).ip] if ready else []
    if not ips:
        ips = [str(p["ip"]) for p in old.get("podIPs") or [] if isinstance(p, Mapping) and p.get("ip")]
    if not ips and old.get("podIP"):
        ips = [old["podIP"]]
    return ips


def generate_pod_status(pod: Mapping[str, Any], runtime: PodStatus, *, now: datetime,
                        ready: Mapping[str, bool] | None = None, started: Mapping[str, bool] | None = None,
                        waiting_reasons: Mapping[str, tuple[str, str]] | None = None,
                        host_ip: str = "", host_ips: Sequence[str] = ()) -> dict[str, Any]:
    """The pod's new `status` (a fresh dict; `pod` is not changed)."""
    spec = pod.get("spec") or {}
    old: Mapping[str, Any] = pod.get("status") or {}
    init_specs = [c for c in spec.get("initContainers") or [] if isinstance(c, Mapping)]
    app_specs = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    reasons = waiting_reasons or {}
    inits = _container_statuses(pod, runtime, init_specs, old.get("initContainerStatuses") or [],
                                has_inits=bool(init_specs), is_init=True, waiting_reasons=reasons)
    apps = _container_statuses(pod, runtime, app_specs, old.get("containerStatuses") or [],
                               has_inits=bool(init_specs), is_init=False, waiting_reasons=reasons)
    _set_probe_fields(inits, init_specs, is_init=True, ready={}, started={})
    _set_probe_fields(apps, app_specs, is_init=False, ready=ready or {}, started=started or {})

    phase = get_phase(pod, list(inits.values()), list(apps.values()))
    if phase not in TERMINAL_PHASES and old.get("phase") in TERMINAL_PHASES:
        phase = old["phase"]  # pods never leave a terminal phase
    status: dict[str, Any] = {"phase": phase}
    if phase == old.get("phase"):
        for key in ("reason", "message"):
            if old.get(key):
                status[key] = old[key]

    others = [deep_copy(dict(c)) for c in old.get("conditions") or []
              if isinstance(c, Mapping) and c.get("type") not in KUBELET_CONDITIONS]
    containers_ready = _containers_ready(apps, phase)
    owned = [_initialized(pod, inits, apps, phase), _ready(pod, containers_ready, others), containers_ready,
             _condition("PodScheduled", True)]
    _stamp(owned, old.get("conditions") or [], now)
    status["conditions"] = others + owned

    all_host_ips = [ip for ip in (host_ip, *host_ips) if ip]
    all_host_ips = list(dict.fromkeys(all_host_ips)) or \
        [str(p["ip"]) for p in old.get("hostIPs") or [] if isinstance(p, Mapping) and p.get("ip")] or \
        ([old["hostIP"]] if old.get("hostIP") else [])
    if all_host_ips:
        status["hostIP"] = all_host_ips[0]
        status["hostIPs"] = [{"ip": ip} for ip in all_host_ips]
    pod_ips = _pod_ips(pod, runtime, old, all_host_ips)
    if pod_ips:
        status["podIP"] = pod_ips[0]
        status["podIPs"] = [{"ip": ip} for ip in pod_ips]
    status["startTime"] = old.get("startTime") or format_timestamp(now)
    if init_specs:
        status["initContainerStatuses"] = list(inits.values())
    status["containerStatuses"] = sorted(apps.values(), key=lambda s: s["name"])  # upstream sorts by name
    status["qosClass"] = qos_class(spec)
    return status


def _canonical(status: Mapping[str, Any]) -> dict[str, Any]:
    """`status` with its keyed lists in a fixed order: the only noise status_changed ignores."""
    canonical = dict(status)
    for key, field in (("conditions", "type"), ("containerStatuses", "name"),
                       ("initContainerStatuses", "name"), ("ephemeralContainerStatuses", "name")):
        items = canonical.get(key)
        if isinstance(items, list):
            canonical[key] = sorted(items, key=lambda item: str(item.get(field, "")) if isinstance(item, Mapping)
                                    else "")
    return canonical


def status_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether `new` differs from `old` in anything but the order of conditions and container statuses
    (init container statuses keep spec order on the wire, but a reorder alone is not worth a write)."""
    return _canonical(old or {}) != _canonical(new)
