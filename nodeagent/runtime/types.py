"""What the runtime knows about a pod: upstream's kubecontainer.PodStatus, SandboxStatus and
ContainerStatus (pkg/kubelet/container/runtime.go), as frozen dataclasses.

The PLEG builds these from Docker (labels + inspect), `computePodActions` decides from them, the status
manager turns them into the API's containerStatuses. Nothing here talks to Docker: the dataclasses are
the contract between the runtime (I/O) and the pure decision code, so tables of them drive unit tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from nodeagent.runtime.labels import Kind


class ContainerState(str, Enum):
    """Upstream's ContainerState: Docker's created/running/exited/(dead, removing...) folded into four."""

    CREATED = "created"
    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"


class SandboxState(str, Enum):
    """A sandbox is READY while its pause container runs (and its network is set up), NOTREADY otherwise."""

    READY = "ready"
    NOTREADY = "notready"


@dataclass(frozen=True)
class ContainerStatus:
    """One app or init container of a pod as Docker holds it (one per attempt: restarts make new ones)."""

    id: str  # Docker's full container id
    name: str  # the container's name in the pod spec
    state: ContainerState
    image: str  # the image as the spec named it
    image_id: str = ""  # "docker-pullable://..." or "sha256:..." as Docker reports
    hash: str = ""  # hash of the container's spec when it was created: a change means restart
    restart_count: int = 0  # the attempt number this container was created with
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exit_code: int = 0
    reason: str = ""  # "Completed", "Error", "OOMKilled", ... for exited containers
    message: str = ""  # the termination message, for exited containers


@dataclass(frozen=True)
class SandboxStatus:
    """The pause container that holds a pod's namespaces."""

    id: str
    state: SandboxState
    attempt: int = 0  # how many sandboxes this pod had before this one
    created_at: datetime | None = None
    ip: str = ""  # the pod IP wired into its namespace ("" until the network is set up; host IP for hostNetwork)
    host_network: bool = False


@dataclass(frozen=True)
class PodStatus:
    """Everything the runtime has for one pod uid: its sandboxes (newest first) and containers (newest
    first within each name), whichever state they are in."""

    uid: str
    name: str
    namespace: str
    sandboxes: tuple[SandboxStatus, ...] = ()
    containers: tuple[ContainerStatus, ...] = ()
    ips: tuple[str, ...] = field(default=())

    def latest(self, name: str) -> ContainerStatus | None:
        """The newest container created for spec container `name`, in any state."""
        found = [c for c in self.containers if c.name == name]
        if not found:
            return None
        return max(found, key=lambda c: (c.restart_count, c.created_at.timestamp() if c.created_at else 0.0))

    def running(self) -> tuple[ContainerStatus, ...]:
        return tuple(c for c in self.containers if c.state is ContainerState.RUNNING)


@dataclass(frozen=True)
class ContainerRecord:
    """One container of this kubelet as the runtime's cheap list shows it (no inspection): what the
    container GC decides from (upstream's runtimeapi.Container from ListContainers, sandboxes included).
    `kind` None marks an unidentified container: it carries this node's label but its pod identity
    cannot be read back (upstream's unidentifiedContainers of the container GC)."""

    id: str
    kind: Kind | None  # None: unidentified
    pod_uid: str
    name: str  # the spec container's name; "POD" for sandboxes
    state: ContainerState  # a sandbox that runs is RUNNING (upstream SANDBOX_READY)
    created: float  # unix seconds
    attempt: int = 0  # restartCount for containers, the sandbox attempt for sandboxes
    sandbox_id: str = ""  # for app/init containers: the sandbox whose namespaces they joined
    grace_period: int = 30  # the pod's terminationGracePeriodSeconds, to stop one in an unknown state
