"""The container runtime as the pod-sync code sees it: upstream's kubecontainer.Runtime (pkg/kubelet/
container/runtime.go) cut down to what one Docker engine and slimkube's syncPod need, plus the typed
errors whose `reason` becomes a container's waiting reason (pkg/kubelet/images/types.go: ErrImagePull,
ErrImageNeverPull, ImageInspectError, InvalidImageName).

Pod and container specs are the API's dicts; what comes back is the frozen `types` dataclasses and the
small records below. `nodeagent.runtime.docker.DockerRuntime` implements it; tests of the pure decision
code use fakes of this Protocol.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from nodeagent.runtime.types import PodStatus


class RuntimeFailure(Exception):
    """Base of the runtime's typed errors; `reason` is the waiting reason the status manager shows."""

    reason = "RuntimeError"


class ImagePullError(RuntimeFailure):
    reason = "ErrImagePull"


class ImageNeverPullError(RuntimeFailure):
    reason = "ErrImageNeverPull"


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
class ImageRecord:
    """One local image as node status lists it (`status.images`: names and sizeBytes)."""

    id: str
    repo_tags: tuple[str, ...]
    repo_digests: tuple[str, ...]
    size: int
    created: int  # unix seconds


@dataclass(frozen=True)
class ContainerStats:
    cpu_usage_ns: int
    memory_usage_bytes: int
    memory_limit_bytes: int


class Runtime(Protocol):
    """What syncPod, the kill path, probes, logs and node status call. Every call blocks on Docker."""

    def list_pods(self) -> list[PodStatus]:
        """Every pod this node's containers belong to, rebuilt from Docker labels and inspection alone."""
        ...

    def run_sandbox(
        self, pod: Mapping[str, Any], *, attempt: int, extra_labels: Mapping[str, str] | None = None
    ) -> str:
        """Create and start the pod's pause container; returns its id (network set up by the caller)."""
        ...

    def sandbox_pid(self, sandbox_id: str) -> int:
        """The pause process's host pid, whose /proc/<pid>/ns/net the network code wires."""
        ...

    def stop_sandbox(self, sandbox_id: str) -> None: ...

    def remove_sandbox(self, sandbox_id: str) -> None: ...

    def create_container(
        self,
        pod: Mapping[str, Any],
        container: Mapping[str, Any],
        *,
        sandbox_id: str,
        attempt: int,
        config: Mapping[str, Any],
        extra_labels: Mapping[str, str] | None = None,
    ) -> str:
        """Create (not start) one app/init container joined to the sandbox's namespaces. `config` holds
        docker `create_container` keyword args (image, command, entrypoint, environment, working_dir,
        user, ...) and `host_config`: a dict of `create_host_config` keyword args (binds, cpu_shares,
        mem_limit, ...). The runtime adds name, labels and the network/ipc/pid modes."""
        ...

    def start_container(self, container_id: str) -> None: ...

    def stop_container(self, container_id: str, grace_seconds: float) -> None:
        """SIGTERM (or the image's stop signal), wait up to `grace_seconds`, then SIGKILL."""
        ...

    def remove_container(self, container_id: str) -> None: ...

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
        since: int | None = None,
    ) -> bytes | Iterator[bytes]:
        """The container's stdout+stderr: bytes, or an iterator of chunks when `follow`."""
        ...

    def ensure_image(self, image: str, pull_policy: str) -> str:
        """Make `image` present per pull policy (Always/IfNotPresent/Never, "" = upstream's default);
        returns the image id, or raises one of the image errors above."""
        ...

    def images(self) -> list[ImageRecord]: ...

    def stats(self, container_id: str) -> ContainerStats | None: ...
