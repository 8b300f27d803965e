"""The kubelet's runtime boundary in CRI's shape: frozen records of what a sandbox and a container are to
be, decided by the kubelet's sync layer from the pod and carried out by the runtime (nodeagent/runtime/
docker.py), which never sees an API object.

Upstream: k8s.io/cri-api pkg/apis/runtime/v1/api.proto (PodSandboxConfig, PodSandboxMetadata, DNSConfig,
PortMapping, LinuxPodSandboxConfig, ContainerConfig, ContainerMetadata, Mount, Device,
LinuxContainerResources, LinuxContainerSecurityContext, NamespaceOption).

Departures from the CRI messages: the Linux options are flattened into the fields Docker can apply
(`resources`, `security`, `pid`; a sandbox's host namespaces and sysctls); `tmpfs` mounts are the
kubelet's own (a memory-backed emptyDir); fields the Docker runtime has no use for are carried but not
applied: `log_directory`/`log_path` (Docker's json-file driver keeps the logs, the dockershim symlinked
them there), `dns_config` (each container bind-mounts the pod's resolv.conf the kubelet writes) and
`port_mappings` (hostPorts are the kubelet's iptables rules, network/hostport_manager.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum


class Propagation(str, Enum):
    """A mount's propagation (upstream CRI MountPropagation, from the spec's mountPropagation)."""

    PRIVATE = "None"
    HOST_TO_CONTAINER = "HostToContainer"
    BIDIRECTIONAL = "Bidirectional"


class PidNamespace(str, Enum):
    """Whose PID namespace a container joins (CRI NamespaceMode): its own, the pod's (shareProcessNamespace:
    the sandbox's) or the node's (hostPID). Network and IPC are always the sandbox's."""

    CONTAINER = "container"
    POD = "pod"
    NODE = "node"


@dataclass(frozen=True)
class Mount:
    """One bind mount of a host path into the container (CRI Mount)."""

    host_path: str
    container_path: str
    read_only: bool = False
    propagation: Propagation = Propagation.PRIVATE


@dataclass(frozen=True)
class Resources:
    """Linux cgroup settings (CRI LinuxContainerResources): 0 means unset for period, quota and memory."""

    cpu_shares: int = 2
    cpu_period: int = 0
    cpu_quota: int = 0
    memory_limit_bytes: int = 0


@dataclass(frozen=True)
class SecurityOptions:
    """The effective security context (CRI LinuxContainerSecurityContext) as the runtime applies it."""

    user: str = ""  # "uid" or "uid:gid"; "" = the image's
    supplemental_groups: tuple[str, ...] = ()
    privileged: bool = False
    read_only_rootfs: bool = False
    capabilities_add: tuple[str, ...] = ()  # CAP_-prefixed, or "ALL"
    capabilities_drop: tuple[str, ...] = ()
    no_new_privileges: bool = False


@dataclass(frozen=True)
class PodSandboxMetadata:
    """Who a sandbox is for (CRI PodSandboxMetadata): the runtime names the sandbox after it."""

    name: str
    uid: str
    namespace: str
    attempt: int = 0


@dataclass(frozen=True)
class DNSConfig:
    """The pod's resolver settings (CRI DNSConfig): nameservers, search domains, `options` entries."""

    servers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class PortMapping:
    """One hostPort of the pod (CRI PortMapping)."""

    protocol: str
    container_port: int
    host_port: int
    host_ip: str = ""


@dataclass(frozen=True)
class LinuxSandboxOptions:
    """A sandbox's Linux options (CRI LinuxPodSandboxConfig, flattened): which namespaces are the node's,
    and the pod's sysctls."""

    host_network: bool = False
    host_ipc: bool = False
    host_pid: bool = False
    sysctls: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class PodSandboxConfig:
    """Everything the runtime needs to run one pod's sandbox (CRI PodSandboxConfig)."""

    metadata: PodSandboxMetadata
    hostname: str = ""  # "" with the node's network: the node's hostname stays
    log_directory: str = ""
    dns_config: DNSConfig | None = None
    port_mappings: tuple[PortMapping, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    linux: LinuxSandboxOptions = LinuxSandboxOptions()


@dataclass(frozen=True)
class ContainerMetadata:
    """Which container of the pod, and its attempt (the restart count) (CRI ContainerMetadata)."""

    name: str
    attempt: int = 0


@dataclass(frozen=True)
class Device:
    """A host device made available in the container (CRI Device)."""

    container_path: str
    host_path: str
    permissions: str = "rwm"


@dataclass(frozen=True)
class ContainerConfig:
    """Everything the runtime needs to create one app or init container, in the kubelet's terms
    (upstream CRI runtimeapi.ContainerConfig). The runtime names it from `metadata` and the sandbox's
    metadata, adds its own labels (the container type, the sandbox, the node) to `labels` and
    `annotations`, and joins it to the sandbox's network and IPC namespaces; `pid` says which PID
    namespace to join."""

    image: str
    metadata: ContainerMetadata = ContainerMetadata("")
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    log_path: str = ""  # relative to the sandbox's log_directory
    devices: tuple[Device, ...] = ()
    command: tuple[str, ...] = ()  # replaces the image's entrypoint; () keeps it
    args: tuple[str, ...] = ()  # replaces the image's CMD; () keeps it (unless `command` is set)
    env: tuple[tuple[str, str], ...] = ()
    working_dir: str = ""
    mounts: tuple[Mount, ...] = ()
    tmpfs: Mapping[str, str] = field(default_factory=dict)  # container path → mount options
    resources: Resources = Resources()
    security: SecurityOptions = SecurityOptions()
    pid: PidNamespace = PidNamespace.CONTAINER
    tty: bool = False
    stdin: bool = False
    stdin_once: bool = False
