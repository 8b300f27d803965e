"""`Runtime` on one Docker engine through the SDK's low-level `APIClient` (version="auto": the engine
here speaks API 1.41, the SDK negotiates; shared/RECIPES.md "Docker SDK facts").

Upstream: the dockershim (pkg/kubelet/dockershim: docker_sandbox.go, docker_container.go, docker_image.go,
exec.go) under kuberuntime. What it does the same way:
- a sandbox is a pause container (`slimkube/pause:1`, built on this node by nodeagent.images) with
  network_mode none (host for hostNetwork), ipc_mode shareable (host for hostIPC), hostname = the pod's
  hostname truncated to 63 characters. Upstream's OOM score adj -998 for it (PodInfraOOMAdj) is left out:
  these machines lack CAP_SYS_RESOURCE and runc then fails to start the container;
- app containers join the sandbox's network and IPC namespaces with `container:<sandbox id>`, and its PID
  namespace with shareProcessNamespace (the host's with hostPID);
- stop is Docker's stop with the grace period as timeout: the stop signal, a wait, then SIGKILL;
- the termination message is a host file bind-mounted at the container's terminationMessagePath (as
  kuberuntime's makeMounts does) when a `termination_dir` is configured, else the file is copied out of
  the stopped container with `get_archive` (which cannot see a path on a tmpfs such as /dev); with
  FallbackToLogsOnError and a failed container the last 80 log lines, at most 2048 bytes, stand in;
- a create that meets an existing name (a create whose reply was lost) retries with a random suffix, as
  the dockershim's randomizeName did.
Image pulls stream the engine's progress and fail on its first error line: a registry that refuses the
connection fails in well under a second with ErrImagePull.
"""

from __future__ import annotations

import io
import math
import os
import secrets
import tarfile
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import docker.errors

from nodeagent.images import PAUSE_IMAGE, ensure_pause_image
from nodeagent.runtime import labels as L
from nodeagent.runtime.docker_status import AnyStatus, assemble, container_status, sandbox_status
from nodeagent.runtime.interface import (
    ContainerStats,
    CreateContainerError,
    ExecResult,
    ExecTimeout,
    ImageInspectError,
    ImageNeverPullError,
    ImagePullError,
    ImageRecord,
    InvalidImageNameError,
    StartContainerError,
)
from nodeagent.runtime.spechash import container_hash
from nodeagent.runtime.types import PodStatus, SandboxStatus

MAX_TERMINATION_MESSAGE = 4096  # upstream's per-container limit on the message file
FALLBACK_LOG_LINES = 80  # upstream: kubecontainer.MaxContainerTerminationMessageLogLines
FALLBACK_LOG_BYTES = 2048  # upstream: kubecontainer.MaxContainerTerminationMessageLogLength
MAX_EXEC_OUTPUT = 16 * 1024


class DockerAPI(Protocol):
    """The calls of docker's `APIClient` used here (the PLEG's tests fake the first four)."""

    def containers(self, all: bool = False, filters: dict | None = None) -> list[dict]: ...
    def inspect_container(self, container: str) -> dict: ...
    def get_archive(self, container: str, path: str) -> tuple[Iterator[bytes], dict]: ...
    def logs(self, container: str, **kwargs: Any) -> Any: ...
    def create_host_config(self, **kwargs: Any) -> dict: ...
    def create_container(self, image: str, **kwargs: Any) -> dict: ...
    def start(self, container: str) -> None: ...
    def stop(self, container: str, timeout: int | None = None) -> None: ...
    def remove_container(self, container: str, v: bool = False, force: bool = False) -> None: ...
    def exec_create(self, container: str, cmd: list[str], **kwargs: Any) -> dict: ...
    def exec_start(self, exec_id: str, **kwargs: Any) -> Any: ...
    def exec_inspect(self, exec_id: str) -> dict: ...
    def inspect_image(self, image: str) -> dict: ...
    def pull(self, repository: str, tag: str | None = None, **kwargs: Any) -> Any: ...
    def images(self, **kwargs: Any) -> list[dict]: ...
    def stats(self, container: str, **kwargs: Any) -> Any: ...
    def import_image_from_data(self, data: bytes, **kwargs: Any) -> Any: ...


def split_reference(image: str) -> tuple[str, str]:
    """(repository, tag or digest) for a pull; no tag means `latest` as Docker and upstream assume."""
    if not image or image != image.strip() or any(c.isspace() for c in image) or image != image.rstrip("/:@"):
        raise InvalidImageNameError(f'invalid image name "{image}"')
    if "@" in image:
        repository, digest = image.split("@", 1)
        return repository, digest
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        return image[:colon], image[colon + 1 :]
    return image, "latest"


def default_pull_policy(image: str) -> str:
    """Upstream's defaulting: Always for `:latest` or no tag, else IfNotPresent."""
    if "@" in image:
        return "IfNotPresent"
    slash, colon = image.rfind("/"), image.rfind(":")
    return "Always" if colon <= slash or image[colon + 1 :] == "latest" else "IfNotPresent"


def pod_hostname(pod: Mapping[str, Any]) -> str:
    """spec.hostname or the pod name, cut to 63 characters without a trailing `-`/`.` (upstream's
    truncatePodHostnameIfNeeded)."""
    name = (pod.get("spec") or {}).get("hostname") or (pod.get("metadata") or {}).get("name", "")
    return name[:63].rstrip("-.") if len(name) > 63 else name


def _first_file(chunks: Iterator[bytes], limit: int) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks)), mode="r") as tar:
        for member in tar:
            if member.isfile():
                handle = tar.extractfile(member)
                return handle.read(limit) if handle else b""
    return b""


class DockerRuntime:
    """The runtime for one node: every container it makes carries `slimkube.io/node=<node_name>`, and
    only those are listed."""

    def __init__(
        self,
        api: DockerAPI,
        *,
        node_name: str,
        pod_ip: Callable[[SandboxStatus], str] | None = None,
        termination_dir: Path | None = None,
    ) -> None:
        self.api = api
        self.node_name = node_name
        self.pod_ip = pod_ip
        self.termination_dir = termination_dir
        self._pause_ready = False

    # ---- listing (the PLEG and list_pods) ----

    def list_containers(self) -> list[dict]:
        """The low-level list of this node's containers: no inspection, ~7 ms for 50 containers."""
        return self.api.containers(all=True, filters={"label": f"{L.NODE}={self.node_name}"})

    def inspect_status(self, container_id: str, identity: L.Identity) -> AnyStatus:
        """Inspect one container (and read its termination message once it has exited); raises
        docker.errors.NotFound when it is gone."""
        inspect = self.api.inspect_container(container_id)
        if identity.kind is L.Kind.SANDBOX:
            return sandbox_status(identity, inspect)
        state = inspect.get("State") or {}
        exited = not state.get("Running") and state.get("Status") in ("exited", "dead")
        message = self._termination_message(identity, inspect) if exited else ""
        return container_status(identity, inspect, message=message)

    def list_pods(self) -> list[PodStatus]:
        grouped: dict[str, list[tuple[L.Identity, AnyStatus]]] = {}
        for entry in self.list_containers():
            identity = L.parse_entry(entry)
            if identity is None:
                continue
            try:
                status = self.inspect_status(entry["Id"], identity)
            except docker.errors.NotFound:  # removed between the list and the inspect
                continue
            grouped.setdefault(identity.pod_uid, []).append((identity, status))
        return [assemble(uid, items, pod_ip=self.pod_ip) for uid, items in grouped.items()]

    # ---- sandboxes ----

    def run_sandbox(
        self, pod: Mapping[str, Any], *, attempt: int, extra_labels: Mapping[str, str] | None = None
    ) -> str:
        if not self._pause_ready:
            ensure_pause_image(self.api)
            self._pause_ready = True
        spec = pod.get("spec") or {}
        host_network = bool(spec.get("hostNetwork"))
        host_config = self.api.create_host_config(
            network_mode="host" if host_network else "none",
            ipc_mode="host" if spec.get("hostIPC") else "shareable",
        )
        labels = L.sandbox_labels(pod, node=self.node_name, attempt=attempt, extra=extra_labels)
        kwargs: dict[str, Any] = {"labels": labels}
        if not host_network:  # Docker refuses a hostname together with the host's network
            kwargs["hostname"] = pod_hostname(pod)
        sandbox_id = self._create(PAUSE_IMAGE, L.sandbox_name(pod, attempt), host_config, kwargs)
        self.start_container(sandbox_id)
        return sandbox_id

    def sandbox_pid(self, sandbox_id: str) -> int:
        return int(self.api.inspect_container(sandbox_id)["State"]["Pid"])

    def stop_sandbox(self, sandbox_id: str) -> None:
        self.stop_container(sandbox_id, 10)  # pause exits at once on SIGTERM (nodeagent/pause/pause.c)

    def remove_sandbox(self, sandbox_id: str) -> None:
        self.remove_container(sandbox_id)

    # ---- containers ----

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
        spec = pod.get("spec") or {}
        kwargs = dict(config)
        host_kwargs = dict(kwargs.pop("host_config", None) or {})
        kwargs.pop("name", None)
        ours = L.container_labels(pod, container, node=self.node_name, sandbox_id=sandbox_id, attempt=attempt,
                                  spec_hash=container_hash(container), extra=extra_labels)
        kwargs["labels"] = {**(kwargs.get("labels") or {}), **ours}
        joined = f"container:{sandbox_id}"
        host_kwargs.update(network_mode=joined, ipc_mode=joined)
        if spec.get("hostPID"):
            host_kwargs["pid_mode"] = "host"
        elif spec.get("shareProcessNamespace"):
            host_kwargs["pid_mode"] = joined
        for key in ("hostname", "domainname"):  # the sandbox owns the UTS identity of the pod
            kwargs.pop(key, None)
        identity = L.parse_labels(ours)
        if self.termination_dir is not None and identity is not None:
            host_file = self._message_file(identity)
            host_file.parent.mkdir(parents=True, exist_ok=True)
            host_file.write_bytes(b"")
            os.chmod(host_file, 0o666)  # any runAsUser may write its message
            path = identity.termination_message_path
            host_kwargs["binds"] = _with_bind(host_kwargs.get("binds"), str(host_file), path)
        image = kwargs.pop("image", None) or container.get("image", "")
        try:
            host_config = self.api.create_host_config(**host_kwargs)
        except (docker.errors.DockerException, TypeError, ValueError) as exc:
            raise CreateContainerError(str(exc)) from exc
        return self._create(image, L.make_name(container["name"], pod, attempt), host_config, kwargs)

    def _create(self, image: str, name: str, host_config: dict, kwargs: dict[str, Any]) -> str:
        try:
            try:
                return self.api.create_container(image, name=name, host_config=host_config, **kwargs)["Id"]
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise
            name = f"{name}{L.DELIMITER}{secrets.token_hex(4)}"
            return self.api.create_container(image, name=name, host_config=host_config, **kwargs)["Id"]
        except docker.errors.APIError as exc:
            raise CreateContainerError(exc.explanation or str(exc)) from exc

    def start_container(self, container_id: str) -> None:
        try:
            self.api.start(container_id)
        except docker.errors.APIError as exc:
            raise StartContainerError(exc.explanation or str(exc)) from exc

    def stop_container(self, container_id: str, grace_seconds: float) -> None:
        try:
            self.api.stop(container_id, timeout=max(0, math.ceil(grace_seconds)))
        except docker.errors.NotFound:
            pass

    def remove_container(self, container_id: str) -> None:
        try:
            identity = L.parse_entry(self.api.inspect_container(container_id))
            self.api.remove_container(container_id, v=True, force=True)
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # 409: a removal already in progress
                raise
            return
        if self.termination_dir is not None and identity is not None and identity.kind is L.Kind.CONTAINER:
            host_file = self._message_file(identity)
            host_file.unlink(missing_ok=True)
            for directory in (host_file.parent, host_file.parent.parent):
                try:
                    directory.rmdir()
                except OSError:  # not empty: other containers of the pod still have messages
                    break

    # ---- termination messages ----

    def _message_file(self, identity: L.Identity) -> Path:
        assert self.termination_dir is not None
        return self.termination_dir / identity.pod_uid / f"{identity.container_name}_{identity.attempt}"

    def _termination_message(self, identity: L.Identity, inspect: Mapping[str, Any]) -> str:
        message = b""
        if self.termination_dir is not None:
            try:
                with open(self._message_file(identity), "rb") as handle:
                    message = handle.read(MAX_TERMINATION_MESSAGE)
            except OSError:
                pass
        else:
            try:
                chunks, _ = self.api.get_archive(inspect["Id"], identity.termination_message_path)
                message = _first_file(chunks, MAX_TERMINATION_MESSAGE)
            except (docker.errors.APIError, tarfile.TarError):
                pass
        exit_code = (inspect.get("State") or {}).get("ExitCode", 0)
        if not message and identity.termination_message_policy == "FallbackToLogsOnError" and exit_code != 0:
            try:
                message = bytes(self.api.logs(inspect["Id"], stdout=True, stderr=True, tail=FALLBACK_LOG_LINES))
            except docker.errors.APIError:
                message = b""
            message = message[-FALLBACK_LOG_BYTES:]
        return message.decode("utf-8", errors="replace")

    # ---- exec and logs ----

    def exec(self, container_id: str, argv: list[str], *, timeout: float) -> ExecResult:
        """Docker exec has no deadline of its own: the output is read on a helper thread and the caller
        gives up after `timeout` (the process may go on, as with upstream's dockershim ExecSync)."""
        exec_id = self.api.exec_create(container_id, argv, stdout=True, stderr=True)["Id"]
        result: dict[str, bytes] = {}

        def run() -> None:
            output = bytearray()
            for chunk in self.api.exec_start(exec_id, stream=True):
                if len(output) < MAX_EXEC_OUTPUT:
                    output += chunk[: MAX_EXEC_OUTPUT - len(output)]
            result["output"] = bytes(output)

        reader = threading.Thread(target=run, name=f"exec-{container_id[:12]}", daemon=True)
        reader.start()
        reader.join(timeout)
        if reader.is_alive():
            raise ExecTimeout(f"command {argv!r} timed out after {timeout}s")
        exit_code = self.api.exec_inspect(exec_id).get("ExitCode")
        return ExecResult(exit_code=-1 if exit_code is None else int(exit_code), output=result.get("output", b""))

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        timestamps: bool = False,
        follow: bool = False,
        since: int | None = None,
    ) -> bytes | Iterator[bytes]:
        return self.api.logs(container_id, stdout=True, stderr=True, stream=follow, follow=follow,
                             timestamps=timestamps, tail="all" if tail is None else tail, since=since)

    # ---- images ----

    def _image_id(self, image: str) -> str | None:
        try:
            return self.api.inspect_image(image)["Id"]
        except docker.errors.ImageNotFound:
            return None
        except docker.errors.APIError as exc:
            raise ImageInspectError(f'failed to inspect image "{image}": {exc.explanation or exc}') from exc

    def ensure_image(self, image: str, pull_policy: str) -> str:
        repository, tag = split_reference(image)
        policy = pull_policy or default_pull_policy(image)
        present = self._image_id(image)
        if policy == "Never":
            if present is None:
                raise ImageNeverPullError(f'Container image "{image}" is not present with pull policy of Never')
            return present
        if policy == "IfNotPresent" and present is not None:
            return present
        self._pull(image, repository, tag)
        pulled = self._image_id(image)
        if pulled is None:
            raise ImagePullError(f'pull of "{image}" reported success but the image is missing')
        return pulled

    def _pull(self, image: str, repository: str, tag: str) -> None:
        try:
            for line in self.api.pull(repository, tag=tag, stream=True, decode=True):
                if isinstance(line, dict) and line.get("error"):
                    raise ImagePullError(f'failed to pull image "{image}": {line["error"]}')
        except docker.errors.APIError as exc:
            raise ImagePullError(f'failed to pull image "{image}": {exc.explanation or exc}') from exc

    def images(self) -> list[ImageRecord]:
        return [
            ImageRecord(
                id=item["Id"],
                repo_tags=tuple(t for t in item.get("RepoTags") or () if t != "<none>:<none>"),
                repo_digests=tuple(d for d in item.get("RepoDigests") or () if d != "<none>@<none>"),
                size=int(item.get("Size", 0)),
                created=int(item.get("Created", 0)),
            )
            for item in self.api.images()
        ]

    def stats(self, container_id: str) -> ContainerStats | None:
        """One sample (`one_shot`: the engine skips its second sample, so this does not wait ~1 s)."""
        try:
            raw = self.api.stats(container_id, stream=False, one_shot=True)
        except docker.errors.APIError:
            return None
        memory = raw.get("memory_stats") or {}
        return ContainerStats(
            cpu_usage_ns=int(((raw.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage", 0)),
            memory_usage_bytes=int(memory.get("usage", 0)),
            memory_limit_bytes=int(memory.get("limit", 0)),
        )


def _with_bind(binds: Any, host_path: str, container_path: str) -> Any:
    """Add one read-write bind to `binds` in whichever form create_host_config was given (dict or list)."""
    if isinstance(binds, Mapping):
        return {**binds, host_path: {"bind": container_path, "mode": "rw"}}
    return [*(binds or []), f"{host_path}:{container_path}:rw"]
