"""The container runtime as the pod-sync code sees it: upstream's kubecontainer.Runtime (pkg/kubelet/
container/runtime.go) cut down to what one Docker engine and slimkube's syncPod need, plus the typed
errors whose `reason` becomes a container's waiting reason (pkg/kubelet/images/types.go: ErrImagePull,
ImagePullBackOff, ErrImageNeverPull, ImageInspectError, InvalidImageName).

The runtime never sees an API object: what goes in is the kubelet's own frozen records in the shape of
upstream's CRI (`nodeagent.runtime.cri`): a `PodSandboxConfig` (metadata, hostname, log
directory, DNS config, port mappings, labels, annotations, Linux options) to run a sandbox, and a
`ContainerConfig` (metadata, image, command and args, envs, mounts, devices, labels, annotations, log
path, stdin/tty, Linux resources and security context) to create a container in it. The kubelet's sync
layer decides them from the pod (`sandbox_config.build_sandbox_config`,
`container_config.build_container_config`, with the names and labels of `labels`); what comes back is the
frozen `types` dataclasses and the small records below. `nodeagent.runtime.docker.DockerRuntime`
implements it and is the one place that speaks Docker's API; tests of the pure decision code use fakes of
this Protocol.
Errors: every runtime call raises only `RuntimeFailure` subclasses (the Docker runtime translates
docker.errors and connection failures), so callers catch exactly these: `ContainerNotFound` (gone
already), `RuntimeUnavailable` (dockerd cannot be reached), `RuntimeOperationError` (the engine refused
the call), and the image/create/start errors whose `reason` is a container's waiting reason.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from nodeagent.runtime.cri import ContainerConfig, PodSandboxConfig
from nodeagent.runtime.types import PodStatus


class RuntimeFailure(Exception):
    """Base of the runtime's typed errors; `reason` is the waiting reason the status manager shows."""

    reason = "RuntimeError"


class ContainerNotFound(RuntimeFailure):
    """The container (or sandbox) does not exist (any more)."""

    reason = "ContainerNotFound"


class RuntimeUnavailable(RuntimeFailure):
    """The runtime cannot be reached (dockerd down, its socket gone, a timeout)."""

    reason = "RuntimeUnavailable"


class RuntimeOperationError(RuntimeFailure):
    """The runtime refused an operation that has no waiting reason of its own (stop, remove, inspect)."""


class ImagePullError(RuntimeFailure):
    reason = "ErrImagePull"


class ImageNeverPullError(RuntimeFailure):
    reason = "ErrImageNeverPull"


class ImagePullBackOffError(RuntimeFailure):
    """A pull of this image for this pod failed recently and its back-off still runs (ErrImagePullBackOff)."""

    reason = "ImagePullBackOff"


class ImageInspectError(RuntimeFailure):
    reason = "ImageInspectError"


class InvalidImageNameError(RuntimeFailure):
    reason = "InvalidImageName"


class CreateContainerError(RuntimeFailure):
    reason = "CreateContainerError"


class StartContainerError(RuntimeFailure):
    """Docker created the container but could not start it (bad command, missing binary): upstream's
    RunContainerError."""

    reason = "RunContainerError"


class ExecTimeout(RuntimeFailure):
    reason = "ExecTimeout"


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    output: bytes  # stdout and stderr interleaved, at most MAX_EXEC_OUTPUT bytes


@dataclass(frozen=True)
class ContainerStream:
    """A process's stdio in a container, hijacked from the runtime (exec or attach). `socket` carries the
    raw output (Docker's multiplexed frames unless `multiplexed` is false, i.e. a TTY) and takes stdin;
    shutting down its write side closes the process's stdin. `exit_code` blocks until the process has
    ended (None: unknown, or attach, where the container goes on). `close` releases the connection."""

    socket: socket.socket
    multiplexed: bool
    resize: Callable[[int, int], None]  # (width, height)
    exit_code: Callable[[], int | None]
    close: Callable[[], None]


@dataclass(frozen=True)
class ImageRecord:
    """One local image as node status lists it (`status.images`: names and sizeBytes)."""

    id: str
    repo_tags: tuple[str, ...]
    repo_digests: tuple[str, ...]
    size: int
    created: int  # unix seconds


@dataclass(frozen=True)
class RegistryAuth:
    """Credentials for one pull (CRI AuthConfig; Docker's X-Registry-Auth): from the pod's pull secrets."""

    username: str
    password: str
    email: str = ""
    server_address: str = ""


@dataclass(frozen=True)
class PulledImage:
    """What a successful pull left on the node: the image id and its size (for the Pulled event)."""

    id: str
    size: int


@dataclass(frozen=True)
class ContainerStats:
    """One sample of Docker's stats of a container (cumulative cpu; memory as the cgroup reports it)."""

    cpu_usage_ns: int
    memory_usage_bytes: int
    memory_limit_bytes: int
    memory_working_set_bytes: int = 0  # usage minus inactive file pages, as upstream's working set
    memory_rss_bytes: int = 0
    page_faults: int = 0
    major_page_faults: int = 0


class Runtime(Protocol):
    """What syncPod, the kill path, probes, logs and node status call. Every call blocks on Docker."""

    def list_pods(self) -> list[PodStatus]:
        """Every pod this node's containers belong to, rebuilt from Docker labels and inspection alone."""
        ...

    def run_sandbox(self, config: PodSandboxConfig) -> str:
        """Create and start the pod's pause container; returns its id (network set up by the caller)."""
        ...

    def sandbox_pid(self, sandbox_id: str) -> int:
        """The pause process's host pid, whose /proc/<pid>/ns/net the network code wires."""
        ...

    def stop_sandbox(self, sandbox_id: str) -> None:
        """Stop the pause container; one already gone is not an error."""
        ...

    def remove_sandbox(self, sandbox_id: str) -> None:
        """Remove the pause container; one already gone is not an error."""
        ...

    def create_container(self, sandbox_id: str, config: ContainerConfig, sandbox_config: PodSandboxConfig) -> str:
        """Create (not start) one app/init container joined to the sandbox's namespaces, as `config` says
        (CRI CreateContainer: the sandbox's config names the pod). Raises CreateContainerError."""
        ...

    def start_container(self, container_id: str) -> None:
        """Raises StartContainerError (RunContainerError) when the engine cannot start it."""
        ...

    def stop_container(self, container_id: str, grace_seconds: float) -> None:
        """SIGTERM (or the image's stop signal), wait up to `grace_seconds`, then SIGKILL; one already gone
        is not an error."""
        ...

    def remove_container(self, container_id: str) -> None:
        """Remove it with its anonymous volumes; one already gone (or being removed) is not an error."""
        ...

    def exec(self, container_id: str, argv: list[str], *, timeout: float) -> ExecResult:
        """Run `argv` in the container (exec probes, hooks); raises ExecTimeout past `timeout`."""
        ...

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        timestamps: bool = False,
        follow: bool = False,
        since: float | None = None,
    ) -> bytes | Iterator[bytes]:
        """The container's stdout+stderr from unix time `since` on: bytes, or an iterator of chunks (one
        per line) when `follow`, which ends when the container does; it may have a `close()`."""
        ...

    def image_ref(self, image: str) -> str | None:
        """The id of the local image `image` names, or None when it is absent (CRI ImageStatus).
        Raises InvalidImageNameError or ImageInspectError."""
        ...

    def pull_image(self, image: str, auth: RegistryAuth | None) -> PulledImage:
        """Pull `image` (with `auth`, or anonymously); raises ImagePullError with the engine's reason."""
        ...

    def images(self) -> list[ImageRecord]: ...

    def version(self) -> str:
        """The engine's version, for node status (containerRuntimeVersion)."""
        ...

    def stats(self, container_id: str) -> ContainerStats | None: ...


class StreamingRuntime(Protocol):
    """What the kubelet's exec and attach endpoints call (upstream: the CRI's Exec/Attach streaming)."""

    def exec_stream(self, container_id: str, argv: list[str], *, stdin: bool, tty: bool) -> ContainerStream:
        """Start `argv` in the container with its stdio on a hijacked connection."""
        ...

    def attach_stream(self, container_id: str, *, stdin: bool) -> ContainerStream:
        """Attach to the container's main process (its TTY setting decides the framing)."""
        ...
