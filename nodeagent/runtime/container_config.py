"""A pod container's runtime configuration, decided purely from the spec: upstream
pkg/kubelet/kuberuntime/kuberuntime_container.go generateContainerConfig, kuberuntime_container_linux.go
(generateLinuxContainerConfig, calculateLinuxResources), helpers_linux.go (milliCPUToShares,
milliCPUToQuota), security_context.go determineEffectiveSecurityContext.

The result is the kubelet's own `cri.ContainerConfig` (upstream's CRI ContainerConfig): metadata (the
container's name and attempt), the kubelet's labels and annotations (labels.py: identity, spec hash,
restart count, grace period, termination message, preStop handler) and the log path
`<container>/<attempt>.log` as kuberuntime's BuildContainerLogsDirectory; the runtime (docker.py)
translates it to Docker's API, names it and adds its own labels and the sandbox's namespaces, as the
dockershim translated the CRI config (docker_container.go, security_context.go).

Decisions, as upstream:

* command replaces the image's entrypoint, args its CMD. Only args: the image's entrypoint runs with
  them. Only command: the image's CMD is dropped (Docker clears it when the entrypoint is overridden). `$(VAR)` in
  both is expanded against the container's environment (ExpandContainerCommandAndArgs).
* CPU: shares = max(2, milli × 1024 / 1000) from the request (the limit when only a limit is set, 2 for
  none); a limit sets period 100000 µs and quota = max(1000, milli × period / 1000). Memory: the limit
  is the memory limit (the runtime allows no swap beyond it, as the kubelet requires swap off).
* Security context: the container's fields override the pod's. runAsUser/runAsGroup → user
  "uid[:gid]" (runAsGroup alone cannot be expressed to Docker without a uid and is ignored);
  supplementalGroups and fsGroup → supplemental groups (upstream adds fsGroup to them; volume ownership by
  fsGroup is not managed); capabilities add/drop with the `CAP_` prefix ("ALL" stays); privileged;
  readOnlyRootFilesystem; allowPrivilegeEscalation false (or runAsNonRoot irrelevant) → no new
  privileges. Pod sysctls belong to the sandbox, whose namespaces app containers join, so they are not
  set here.
* PID namespace: the node's with hostPID, the pod's (the sandbox's) with shareProcessNamespace, else the
  container's own.
* Ports are not part of the config: app containers join the sandbox's network namespace (Docker refuses
  ExposedPorts with `container:` network mode), as dockershim also left them to the sandbox. They are
  informational anyway.
* Managed files (pod_files.py): the pod's etc-hosts at /etc/hosts when the pod has IPs and no volume is
  mounted there; resolv.conf at /etc/resolv.conf unless mounted; the termination message file at
  terminationMessagePath (default /dev/termination-log). They need `pod_dir`; without it none is added.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from control.api.typed.core import Capabilities, Container, Pod, SecurityContext
from control.apimachinery.quantity import cpu_to_millicores, to_bytes
from nodeagent.runtime import labels as L
from nodeagent.runtime.cri import ContainerConfig, ContainerMetadata, Mount, PidNamespace, Resources, SecurityOptions
from nodeagent.runtime.expansion import expand, mapping_for
from nodeagent.runtime.pod_files import etc_hosts_path, resolv_conf_path, termination_log_path
from nodeagent.runtime.spechash import container_hash

MIN_SHARES = 2
SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000
QUOTA_PERIOD = 100_000  # µs, 100 ms
MIN_QUOTA_PERIOD = 1000
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"


def milli_cpu_to_shares(milli_cpu: int) -> int:
    """Upstream milliCPUToShares: 0 → 2 (the kernel's minimum), else milli × 1024 / 1000, at least 2."""
    if milli_cpu == 0:
        return MIN_SHARES
    return max(MIN_SHARES, milli_cpu * SHARES_PER_CPU // MILLI_CPU_TO_CPU)


def milli_cpu_to_quota(milli_cpu: int, period: int = QUOTA_PERIOD) -> int:
    """Upstream milliCPUToQuota: 0 → 0 (no quota), else milli × period / 1000, at least 1000 µs."""
    if milli_cpu == 0:
        return 0
    return max(MIN_QUOTA_PERIOD, milli_cpu * period // MILLI_CPU_TO_CPU)


def linux_resources(container: Mapping[str, Any]) -> Resources:
    """CPU shares, period/quota and the memory limit from the container's resources."""
    resources = Container(container).resources
    requests, limits = resources.requests, resources.limits
    cpu_request = cpu_to_millicores(str(requests["cpu"])) if "cpu" in requests else 0
    cpu_limit = cpu_to_millicores(str(limits["cpu"])) if "cpu" in limits else 0
    shares = milli_cpu_to_shares(cpu_limit if cpu_request == 0 and cpu_limit else cpu_request)
    memory = to_bytes(str(limits["memory"])) if "memory" in limits else 0
    return Resources(cpu_shares=shares, cpu_period=QUOTA_PERIOD if cpu_limit else 0,
                     cpu_quota=milli_cpu_to_quota(cpu_limit), memory_limit_bytes=memory or 0)


def _capability(name: str) -> str:
    upper = name.upper()
    return upper if upper == "ALL" or upper.startswith("CAP_") else f"CAP_{upper}"


def security_options(pod: Mapping[str, Any], container: Mapping[str, Any]) -> SecurityOptions:
    """The effective security context: the container's fields over the pod's."""
    pod_sc = Pod(pod).spec.security_context
    sc = Container(container).security_context or SecurityContext()
    uid = sc.run_as_user if "runAsUser" in sc.raw else pod_sc.run_as_user
    gid = sc.run_as_group if "runAsGroup" in sc.raw else pod_sc.run_as_group
    user = "" if uid is None else f"{uid}:{gid}" if gid is not None else str(uid)
    groups = ([str(pod_sc.fs_group)] if pod_sc.fs_group is not None else []) + [
        str(g) for g in pod_sc.supplemental_groups]
    capabilities = sc.capabilities or Capabilities()
    return SecurityOptions(
        user=user, supplemental_groups=tuple(groups), privileged=bool(sc.privileged),
        read_only_rootfs=bool(sc.read_only_root_filesystem),
        capabilities_add=tuple(_capability(c) for c in capabilities.add),
        capabilities_drop=tuple(_capability(c) for c in capabilities.drop),
        no_new_privileges=sc.allow_privilege_escalation is False)


def pid_namespace(pod: Mapping[str, Any]) -> PidNamespace:
    spec = Pod(pod).spec
    if spec.host_pid:
        return PidNamespace.NODE
    return PidNamespace.POD if spec.share_process_namespace else PidNamespace.CONTAINER


def _env_pairs(env: Sequence[tuple[str, str]] | Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    if isinstance(env, Mapping):
        return tuple(env.items())
    return tuple((name, value) for name, value in env)


def _managed_mounts(container: Mapping[str, Any], pod_dir: str, attempt: int, pod_ips: Sequence[str],
                    taken: set[str]) -> list[Mount]:
    mounts = []
    if pod_ips and "/etc/hosts" not in taken:
        mounts.append(Mount(etc_hosts_path(pod_dir), "/etc/hosts"))
    if "/etc/resolv.conf" not in taken:
        mounts.append(Mount(resolv_conf_path(pod_dir), "/etc/resolv.conf", read_only=True))
    message_path = container.get("terminationMessagePath", DEFAULT_TERMINATION_MESSAGE_PATH)
    if message_path and message_path not in taken:
        mounts.append(Mount(termination_log_path(pod_dir, container.get("name", ""), attempt), message_path))
    return mounts


def build_container_config(pod: Mapping[str, Any], container: Mapping[str, Any], *,
                           env: Sequence[tuple[str, str]] | Mapping[str, str], mounts: Sequence[Mount],
                           tmpfs: Mapping[str, str] | None = None, image: str, pod_dir: str | None,
                           attempt: int = 0, pod_ips: Sequence[str] = (),
                           extra_labels: Mapping[str, str] | None = None) -> ContainerConfig:
    """Decide the configuration of one container (see the module notes). `mounts` and `tmpfs` are the
    volume mounts (volumes/mounts.py), `env` the resolved environment (env.py), `attempt` the restart
    count the container is created with, `extra_labels` labels the kubelet puts on everything it makes."""
    variables = _env_pairs(env)
    lookup = mapping_for(dict(variables))
    all_mounts = list(mounts)
    if pod_dir is not None:
        taken = {mount.container_path for mount in all_mounts} | set(tmpfs or {})
        all_mounts += _managed_mounts(container, pod_dir, attempt, pod_ips, taken)
    stdin = bool(container.get("stdin"))
    name = str(container.get("name") or "")
    return ContainerConfig(
        image=image,
        metadata=ContainerMetadata(name=name, attempt=attempt),
        labels=L.container_labels(L.sandbox_metadata(pod, 0), name, extra=extra_labels),
        annotations=L.container_annotations(pod, container, attempt=attempt, spec_hash=container_hash(container)),
        log_path=f"{name}/{attempt}.log",
        command=tuple(expand(str(part), lookup) for part in container.get("command") or []),
        args=tuple(expand(str(part), lookup) for part in container.get("args") or []),
        env=variables,
        working_dir=container.get("workingDir") or "",
        mounts=tuple(all_mounts),
        tmpfs=dict(tmpfs or {}),
        resources=linux_resources(container),
        security=security_options(pod, container),
        pid=pid_namespace(pod),
        tty=bool(container.get("tty")),
        stdin=stdin,
        stdin_once=stdin and bool(container.get("stdinOnce")),
    )
