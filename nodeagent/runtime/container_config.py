"""A pod container's Docker configuration, decided purely from the spec: upstream
pkg/kubelet/kuberuntime/kuberuntime_container.go generateContainerConfig, kuberuntime_container_linux.go
(generateLinuxContainerConfig, calculateLinuxResources), helpers_linux.go (milliCPUToShares,
milliCPUToQuota), security_context.go determineEffectiveSecurityContext, and dockershim's translation of
all that to Docker's API (docker_container.go, security_context.go).

The result is the keyword arguments for the docker SDK's `APIClient.create_container(...)` and
`create_host_config(...)`; the runtime (docker.py) adds name, labels and the sandbox's namespaces.

Decisions, as upstream:

* command → Docker Entrypoint, args → Cmd. Only args: the image's entrypoint runs with them. Only
  command: the image's CMD is dropped (Docker clears it when the entrypoint is overridden). `$(VAR)` in
  both is expanded against the container's environment (ExpandContainerCommandAndArgs).
* CPU: shares = max(2, milli × 1024 / 1000) from the request (the limit when only a limit is set, 2 for
  none); a limit sets period 100000 µs and quota = max(1000, milli × period / 1000). Memory: the limit
  sets both mem_limit and memswap_limit (no swap, as the kubelet requires swap off).
* Security context: the container's fields override the pod's. runAsUser/runAsGroup → Docker user
  "uid[:gid]" (runAsGroup alone cannot be expressed to Docker without a uid and is ignored);
  supplementalGroups and fsGroup → group_add (upstream adds fsGroup to the supplemental groups; volume
  ownership by fsGroup is not managed); capabilities add/drop with Docker's `CAP_` prefix ("ALL" stays);
  privileged; readOnlyRootFilesystem → read_only; allowPrivilegeEscalation false (or runAsNonRoot
  irrelevant) → `no-new-privileges`. Pod sysctls belong to the sandbox, whose namespaces app containers
  join, so they are not set here.
* Ports are not exposed: app containers join the sandbox's network namespace and Docker refuses
  ExposedPorts with `container:` network mode ("conflicting options: port exposing and the container
  type network mode"), as dockershim also left them to the sandbox. They are informational anyway.
* Managed files (pod_files.py): the pod's etc-hosts at /etc/hosts when the pod has IPs and no volume is
  mounted there; resolv.conf at /etc/resolv.conf unless mounted; the termination message file at
  terminationMessagePath (default /dev/termination-log). They need `pod_dir`; without it none is added.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from control.apimachinery.quantity import cpu_to_millicores, to_bytes
from nodeagent.runtime.expansion import expand, mapping_for
from nodeagent.runtime.pod_files import etc_hosts_path, resolv_conf_path, termination_log_path

MIN_SHARES = 2
SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000
QUOTA_PERIOD = 100_000  # µs, 100 ms
MIN_QUOTA_PERIOD = 1000
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"


@dataclass(frozen=True)
class ContainerConfig:
    """`create_kwargs` for APIClient.create_container, `host_config_kwargs` for create_host_config."""

    create_kwargs: Mapping[str, Any]
    host_config_kwargs: Mapping[str, Any]


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


def resource_kwargs(container: Mapping[str, Any]) -> dict[str, Any]:
    """cpu_shares, cpu_period/cpu_quota and mem_limit/memswap_limit from the container's resources."""
    resources = container.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    cpu_request = cpu_to_millicores(str(requests["cpu"])) if "cpu" in requests else 0
    cpu_limit = cpu_to_millicores(str(limits["cpu"])) if "cpu" in limits else 0
    kwargs: dict[str, Any] = {
        "cpu_shares": milli_cpu_to_shares(cpu_limit if cpu_request == 0 and cpu_limit else cpu_request)}
    if cpu_limit:
        kwargs["cpu_period"] = QUOTA_PERIOD
        kwargs["cpu_quota"] = milli_cpu_to_quota(cpu_limit)
    if "memory" in limits:
        memory = to_bytes(str(limits["memory"]))
        if memory:
            kwargs["mem_limit"] = memory
            kwargs["memswap_limit"] = memory
    return kwargs


def _capability(name: str) -> str:
    upper = name.upper()
    return upper if upper == "ALL" or upper.startswith("CAP_") else f"CAP_{upper}"


def security_kwargs(pod: Mapping[str, Any], container: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(create kwargs, host config kwargs) from the effective security context."""
    pod_sc = (pod.get("spec") or {}).get("securityContext") or {}
    sc = container.get("securityContext") or {}
    create: dict[str, Any] = {}
    host: dict[str, Any] = {}
    uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
    gid = sc.get("runAsGroup", pod_sc.get("runAsGroup"))
    if uid is not None:
        create["user"] = f"{uid}:{gid}" if gid is not None else str(uid)
    groups = ([str(pod_sc["fsGroup"])] if pod_sc.get("fsGroup") is not None else []) + [
        str(g) for g in pod_sc.get("supplementalGroups") or []]
    if groups:
        host["group_add"] = groups
    if sc.get("privileged"):
        host["privileged"] = True
    if sc.get("readOnlyRootFilesystem"):
        host["read_only"] = True
    capabilities = sc.get("capabilities") or {}
    if capabilities.get("add"):
        host["cap_add"] = [_capability(c) for c in capabilities["add"]]
    if capabilities.get("drop"):
        host["cap_drop"] = [_capability(c) for c in capabilities["drop"]]
    if sc.get("allowPrivilegeEscalation") is False:
        host["security_opt"] = ["no-new-privileges"]
    return create, host


def _env_list(env: Sequence[str] | Mapping[str, str]) -> list[str]:
    if isinstance(env, Mapping):
        return [f"{name}={value}" for name, value in env.items()]
    return list(env)


def _env_mapping(env: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) if "=" in item else (item, "") for item in env)


def _managed_binds(pod: Mapping[str, Any], container: Mapping[str, Any], pod_dir: str, attempt: int,
                   pod_ips: Sequence[str], taken: set[str]) -> list[str]:
    binds = []
    if pod_ips and "/etc/hosts" not in taken:
        binds.append(f"{etc_hosts_path(pod_dir)}:/etc/hosts:rw")
    if "/etc/resolv.conf" not in taken:
        binds.append(f"{resolv_conf_path(pod_dir)}:/etc/resolv.conf:ro")
    message_path = container.get("terminationMessagePath", DEFAULT_TERMINATION_MESSAGE_PATH)
    if message_path and message_path not in taken:
        binds.append(f"{termination_log_path(pod_dir, container.get('name', ''), attempt)}:{message_path}:rw")
    return binds


def build_container_config(pod: Mapping[str, Any], container: Mapping[str, Any], *,
                           env: Sequence[str] | Mapping[str, str], mounts: Sequence[str],
                           tmpfs: Mapping[str, str] | None = None, image: str, pod_dir: str | None,
                           attempt: int = 0, pod_ips: Sequence[str] = ()) -> ContainerConfig:
    """Decide the Docker configuration of one container (see the module notes). `mounts` are Docker bind
    strings and `tmpfs` Docker tmpfs mounts (volumes/mounts.py), `env` the resolved environment (env.py),
    `attempt` the restart count the container is created with."""
    env_list = _env_list(env)
    lookup = mapping_for(_env_mapping(env_list))
    command = [expand(str(part), lookup) for part in container.get("command") or []]
    args = [expand(str(part), lookup) for part in container.get("args") or []]
    stdin = bool(container.get("stdin"))
    create: dict[str, Any] = {
        "image": image,
        "entrypoint": command or None,
        "command": args or None,
        "environment": env_list,
        "working_dir": container.get("workingDir") or None,
        "tty": bool(container.get("tty")),
        "stdin_open": stdin,
        # docker-py sets StdinOnce exactly when stdin is open and the call is not detached.
        "detach": not (stdin and container.get("stdinOnce")),
        "use_config_proxy": False,  # the environment is the spec's, not the kubelet host's proxy settings
    }
    security_create, host = security_kwargs(pod, container)
    create.update(security_create)
    host.update(resource_kwargs(container))
    binds = list(mounts)
    taken = {bind.split(":")[1] for bind in binds} | set(tmpfs or {})
    if pod_dir is not None:
        binds += _managed_binds(pod, container, pod_dir, attempt, pod_ips, taken)
    host["binds"] = binds
    if tmpfs:
        host["tmpfs"] = dict(tmpfs)
    return ContainerConfig(create, host)
