"""`Runtime` on one Docker engine through the SDK's low-level `APIClient` (version="auto": the engine
here speaks API 1.41, the SDK negotiates).

Upstream: the dockershim (pkg/kubelet/dockershim: docker_sandbox.go, docker_container.go, docker_image.go,
exec.go) under kuberuntime. What it does the same way:
- a sandbox is a pause container (`slimkube/pause:1`, built on this node by nodeagent.images) with
  network_mode none (host for hostNetwork), ipc_mode shareable (host for hostIPC), hostname = the pod's
  hostname truncated to 63 characters. Upstream's OOM score adj -998 for it (PodInfraOOMAdj) is left out:
  these machines lack CAP_SYS_RESOURCE and runc then fails to start the container;
- app containers join the sandbox's network and IPC namespaces with `container:<sandbox id>`, and its PID
  namespace with shareProcessNamespace (the host's with hostPID);
- stop is Docker's stop with the grace period as timeout: the stop signal, a wait, then SIGKILL;
- the kubelet's `ContainerConfig` becomes Docker's create and host-config arguments in one place
  (`docker_create_args`, as dockershim's docker_container.go CreateContainer): command → Entrypoint,
  args → Cmd, mounts → bind strings `host:container:ro|rw[,rslave|rshared]`, the memory limit → Memory
  and MemorySwap (no swap), security options → User, GroupAdd, CapAdd/CapDrop, ReadonlyRootfs,
  `no-new-privileges`;
- the termination message: the kubelet bind-mounts a host file of the pod directory at the container's
  terminationMessagePath (nodeagent/runtime/pod_files.py, as kuberuntime's makeMounts does), and the
  runtime copies it out of the exited container with `get_archive` (which sees bind mounts); with
  FallbackToLogsOnError and a failed container the last 80 log lines, at most 2048 bytes, stand in;
- docker.errors and connection failures leave this module only as the interface's RuntimeFailure types
  (`_translated`);
- a create that meets an existing name (a create whose reply was lost) retries with a random suffix, as
  the dockershim's randomizeName did.
Image pulls (`pull_image`) stream the engine's progress and fail on its first error line: a registry
that refuses the connection fails in well under a second with ErrImagePull. Credentials go as the SDK's
`auth_config` (the X-Registry-Auth header); what to pull, when and with which credentials is decided by
nodeagent.image_manager, not here.
"""

from __future__ import annotations

import io
import math
import secrets
import tarfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

import docker.errors

from nodeagent.images import PAUSE_IMAGE, ensure_pause_image
from nodeagent.runtime import labels as L
from nodeagent.runtime.cri import (
    ContainerConfig,
    Device,
    Mount,
    PidNamespace,
    PodSandboxConfig,
    Propagation,
    Resources,
    SecurityOptions,
)
from nodeagent.runtime.docker_status import AnyStatus, assemble, container_status, list_state, sandbox_status
from nodeagent.runtime.interface import (
    ContainerNotFound,
    ContainerStats,
    ContainerStream,
    CreateContainerError,
    ExecResult,
    ExecTimeout,
    ImageInspectError,
    ImagePullError,
    ImageRecord,
    InvalidImageNameError,
    PulledImage,
    RegistryAuth,
    RuntimeFailure,
    RuntimeOperationError,
    RuntimeUnavailable,
    StartContainerError,
)
from nodeagent.runtime.types import ContainerRecord, PodStatus, SandboxStatus

MAX_TERMINATION_MESSAGE = 4096  # upstream's per-container limit on the message file
FALLBACK_LOG_LINES = 80  # upstream: kubecontainer.MaxContainerTerminationMessageLogLines
FALLBACK_LOG_BYTES = 2048  # upstream: kubecontainer.MaxContainerTerminationMessageLogLength
MAX_EXEC_OUTPUT = 16 * 1024
EXIT_CODE_WAIT = 5.0  # seconds an ended exec's output may precede Docker's record of its exit


class DockerAPI(Protocol):
    """The calls of docker's `APIClient` used here (the PLEG's tests fake the first four)."""

    def containers(self, all: bool = False, filters: dict[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def inspect_container(self, container: str) -> dict[str, Any]: ...
    def get_archive(self, container: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]: ...
    def logs(self, container: str, **kwargs: Any) -> Any: ...
    def create_host_config(self, **kwargs: Any) -> dict[str, Any]: ...
    def create_container(self, image: str, **kwargs: Any) -> dict[str, Any]: ...
    def start(self, container: str) -> None: ...
    def stop(self, container: str, timeout: int | None = None) -> None: ...
    def remove_container(self, container: str, v: bool = False, force: bool = False) -> None: ...
    def exec_create(self, container: str, cmd: list[str], **kwargs: Any) -> dict[str, Any]: ...
    def exec_start(self, exec_id: str, **kwargs: Any) -> Any: ...
    def exec_inspect(self, exec_id: str) -> dict[str, Any]: ...
    def exec_resize(self, exec_id: str, height: int | None = None, width: int | None = None) -> None: ...
    def attach_socket(self, container: str, params: dict[str, Any] | None = None, ws: bool = False) -> Any: ...
    def resize(self, container: str, height: int, width: int) -> None: ...
    def inspect_image(self, image: str) -> dict[str, Any]: ...
    def pull(self, repository: str, tag: str | None = None, **kwargs: Any) -> Any: ...
    def images(self, **kwargs: Any) -> list[dict[str, Any]]: ...
    def remove_image(self, image: str, force: bool = False, noprune: bool = False) -> None: ...
    def info(self) -> dict[str, Any]: ...
    def stats(self, container: str, **kwargs: Any) -> Any: ...
    def import_image_from_data(self, data: bytes, repository: str | None = None, tag: str | None = None,
                               changes: list[str] | None = None) -> object: ...
    def version(self) -> dict[str, Any]: ...


def _hijacked(raw: Any, *, multiplexed: bool, resize: Callable[[int, int], None],
              exit_code: Callable[[], int | None]) -> ContainerStream:
    """The socket under docker's `socket=True` answer (a `SocketIO` over the daemon's unix socket, which
    owns the HTTP response: it is kept until `close` so collecting it does not close the connection)."""
    sock = getattr(raw, "_sock", raw)

    def close() -> None:
        for closer in (getattr(raw, "close", None), sock.close):
            try:
                if closer is not None:
                    closer()
            except OSError:
                pass

    return ContainerStream(socket=sock, multiplexed=multiplexed, resize=resize, exit_code=exit_code, close=close)


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


def _first_file(chunks: Iterator[bytes], limit: int) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks)), mode="r") as tar:
        for member in tar:
            if member.isfile():
                handle = tar.extractfile(member)
                return handle.read(limit) if handle else b""
    return b""


def _explain(exc: docker.errors.APIError) -> str:
    return str(exc.explanation or exc)


@contextmanager
def _translated(what: str, refused: type[RuntimeFailure] = RuntimeOperationError) -> Iterator[None]:
    """Docker's errors as the runtime's: NotFound → ContainerNotFound, another refusal → `refused`, no
    answer at all (the socket gone, a timeout: requests' errors are OSErrors) → RuntimeUnavailable."""
    try:
        yield
    except docker.errors.NotFound as exc:
        raise ContainerNotFound(f"{what}: {_explain(exc)}") from exc
    except docker.errors.APIError as exc:
        raise refused(f"{what}: {_explain(exc)}") from exc
    except (docker.errors.DockerException, OSError) as exc:
        raise RuntimeUnavailable(f"{what}: {exc}") from exc


# ---- the kubelet's ContainerConfig in Docker's terms ----

_PROPAGATION_OPTION = {Propagation.PRIVATE: "", Propagation.HOST_TO_CONTAINER: "rslave",
                       Propagation.BIDIRECTIONAL: "rshared"}


def bind_string(mount: Mount) -> str:
    """Docker's bind `host:container:ro|rw[,rslave|rshared]` (dockershim's generateMountBindings)."""
    options = ["ro" if mount.read_only else "rw"]
    if _PROPAGATION_OPTION[mount.propagation]:
        options.append(_PROPAGATION_OPTION[mount.propagation])
    return f"{mount.host_path}:{mount.container_path}:{','.join(options)}"


def device_string(device: Device) -> str:
    """Docker's device `host:container:permissions` (dockershim's makeDevices)."""
    return f"{device.host_path}:{device.container_path}:{device.permissions}"


def docker_env(variables: tuple[tuple[str, str], ...]) -> list[str]:
    """Docker's `KEY=value` list."""
    return [f"{name}={value}" for name, value in variables]


def resource_kwargs(resources: Resources) -> dict[str, Any]:
    """cpu_shares, cpu_period/cpu_quota and mem_limit/memswap_limit for create_host_config."""
    kwargs: dict[str, Any] = {"cpu_shares": resources.cpu_shares}
    if resources.cpu_quota:
        kwargs["cpu_period"] = resources.cpu_period
        kwargs["cpu_quota"] = resources.cpu_quota
    if resources.memory_limit_bytes:
        kwargs["mem_limit"] = resources.memory_limit_bytes
        kwargs["memswap_limit"] = resources.memory_limit_bytes
    return kwargs


def security_kwargs(security: SecurityOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """(create_container kwargs, create_host_config kwargs) for the security options."""
    create: dict[str, Any] = {"user": security.user} if security.user else {}
    host: dict[str, Any] = {}
    if security.supplemental_groups:
        host["group_add"] = list(security.supplemental_groups)
    if security.privileged:
        host["privileged"] = True
    if security.read_only_rootfs:
        host["read_only"] = True
    if security.capabilities_add:
        host["cap_add"] = list(security.capabilities_add)
    if security.capabilities_drop:
        host["cap_drop"] = list(security.capabilities_drop)
    if security.no_new_privileges:
        host["security_opt"] = ["no-new-privileges"]
    return create, host


def docker_create_args(config: ContainerConfig, *, sandbox_id: str | None = None) -> tuple[dict[str, Any],
                                                                                         dict[str, Any]]:
    """(create_container kwargs without name and labels, create_host_config kwargs) for `config`; with a
    `sandbox_id` the container joins that sandbox's network and IPC namespaces (and its PID namespace when
    `config.pid` says so)."""
    create: dict[str, Any] = {
        "image": config.image,
        "entrypoint": list(config.command) or None,
        "command": list(config.args) or None,
        "environment": docker_env(config.env),
        "working_dir": config.working_dir or None,
        "tty": config.tty,
        "stdin_open": config.stdin,
        # docker-py sets StdinOnce exactly when stdin is open and the call is not detached.
        "detach": not config.stdin_once,
        "use_config_proxy": False,  # the environment is the spec's, not the kubelet host's proxy settings
    }
    security_create, host = security_kwargs(config.security)
    create.update(security_create)
    host.update(resource_kwargs(config.resources))
    host["binds"] = [bind_string(mount) for mount in config.mounts]
    if config.devices:
        host["devices"] = [device_string(device) for device in config.devices]
    if config.tmpfs:
        host["tmpfs"] = dict(config.tmpfs)
    if config.pid is PidNamespace.NODE:
        host["pid_mode"] = "host"
    if sandbox_id is not None:
        joined = f"container:{sandbox_id}"
        host.update(network_mode=joined, ipc_mode=joined)
        if config.pid is PidNamespace.POD:
            host["pid_mode"] = joined
    return create, host


def sandbox_docker_labels(config: PodSandboxConfig, *, node: str) -> dict[str, str]:
    """The pause container's Docker labels: the kubelet's labels and annotations, and the runtime's own."""
    return L.docker_labels(config.labels, config.annotations, L.runtime_labels(L.Kind.SANDBOX, node=node))


def container_docker_labels(config: ContainerConfig, *, node: str, sandbox_id: str) -> dict[str, str]:
    """An app or init container's Docker labels, as `sandbox_docker_labels`, with its sandbox's id."""
    return L.docker_labels(config.labels, config.annotations,
                           L.runtime_labels(L.Kind.CONTAINER, node=node, sandbox_id=sandbox_id))


class DockerRuntime:
    """The runtime for one node: every container it makes carries `slimkube.io/node=<node_name>`, and
    only those are listed. `pod_ip` gives a sandbox's IP (Docker cannot tell: sandboxes run with
    network_mode none; the kubelet's network code knows)."""

    def __init__(self, api: DockerAPI, *, node_name: str,
                 pod_ip: Callable[[SandboxStatus], str] | None = None,
                 log_config: Mapping[str, Any] | None = None) -> None:
        self.api = api
        self.node_name = node_name
        self.pod_ip = pod_ip
        self.log_config = log_config  # Docker's LogConfig for app containers (nodeagent/logs.py log_config)
        self._pause_ready = False

    def version(self) -> str:
        """The engine's version, for node status; raises RuntimeUnavailable."""
        with _translated("docker version"):
            return str(self.api.version()["Version"])

    # ---- listing (the PLEG and list_pods) ----

    def list_containers(self) -> list[dict[str, Any]]:
        """The low-level list of this node's containers: no inspection, ~7 ms for 50 containers."""
        with _translated("listing containers"):
            return self.api.containers(all=True, filters={"label": f"{L.NODE}={self.node_name}"})

    def inspect_status(self, container_id: str, identity: L.Identity) -> AnyStatus:
        """Inspect one container (and read its termination message once it has exited); raises
        ContainerNotFound when it is gone."""
        with _translated(f"inspecting {container_id[:12]}"):
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
            except ContainerNotFound:  # removed between the list and the inspect
                continue
            grouped.setdefault(identity.pod_uid, []).append((identity, status))
        return [assemble(uid, items, pod_ip=self.pod_ip) for uid, items in grouped.items()]

    def container_records(self) -> list[ContainerRecord]:
        """This node's containers and sandboxes from the low-level list alone, for the container GC.
        One carrying the node label whose identity cannot be read comes back with kind None."""
        records = []
        for entry in self.list_containers():
            identity = L.parse_entry(entry)
            common = {"id": entry["Id"], "state": list_state(entry), "created": float(entry.get("Created", 0))}
            if identity is None:
                records.append(ContainerRecord(kind=None, pod_uid="", name="", **common))
                continue
            records.append(ContainerRecord(kind=identity.kind, pod_uid=identity.pod_uid, name=identity.container_name,
                                           attempt=identity.attempt, sandbox_id=identity.sandbox_id,
                                           grace_period=identity.grace_period, **common))
        return records

    # ---- sandboxes ----

    def run_sandbox(self, config: PodSandboxConfig) -> str:
        if not self._pause_ready:
            with _translated("preparing the pause image", CreateContainerError):
                ensure_pause_image(self.api)
            self._pause_ready = True
        host_network = config.linux.host_network
        with _translated("sandbox host config", CreateContainerError):
            host_config = self.api.create_host_config(
                network_mode="host" if host_network else "none",
                ipc_mode="host" if config.linux.host_ipc else "shareable",
            )
        kwargs: dict[str, Any] = {"labels": sandbox_docker_labels(config, node=self.node_name)}
        if config.hostname and not host_network:  # Docker refuses a hostname together with the host's network
            kwargs["hostname"] = config.hostname
        sandbox_id = self._create(PAUSE_IMAGE, L.sandbox_name(config.metadata), host_config, kwargs)
        self.start_container(sandbox_id)
        return sandbox_id

    def sandbox_pid(self, sandbox_id: str) -> int:
        with _translated(f"inspecting sandbox {sandbox_id[:12]}"):
            return int(self.api.inspect_container(sandbox_id)["State"]["Pid"])

    def stop_sandbox(self, sandbox_id: str) -> None:
        self.stop_container(sandbox_id, 10)  # pause exits at once on SIGTERM (nodeagent/pause/pause.c)

    def remove_sandbox(self, sandbox_id: str) -> None:
        self.remove_container(sandbox_id)

    # ---- containers ----

    def create_container(self, sandbox_id: str, config: ContainerConfig, sandbox_config: PodSandboxConfig) -> str:
        kwargs, host_kwargs = docker_create_args(config, sandbox_id=sandbox_id)
        kwargs["labels"] = container_docker_labels(config, node=self.node_name, sandbox_id=sandbox_id)
        image = kwargs.pop("image")
        if self.log_config is not None:
            host_kwargs["log_config"] = dict(self.log_config)
        try:
            host_config = self.api.create_host_config(**host_kwargs)
        except (docker.errors.DockerException, TypeError, ValueError) as exc:
            raise CreateContainerError(str(exc)) from exc
        name = L.make_name(config.metadata.name, sandbox_config.metadata, config.metadata.attempt)
        return self._create(image, name, host_config, kwargs)

    def _create(self, image: str, name: str, host_config: dict[str, Any], kwargs: dict[str, Any]) -> str:
        try:
            try:
                created: str = self.api.create_container(image, name=name, host_config=host_config, **kwargs)["Id"]
                return created
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise
            name = f"{name}{L.DELIMITER}{secrets.token_hex(4)}"
            renamed: str = self.api.create_container(image, name=name, host_config=host_config, **kwargs)["Id"]
            return renamed
        except docker.errors.APIError as exc:
            raise CreateContainerError(_explain(exc)) from exc
        except (docker.errors.DockerException, OSError) as exc:
            raise RuntimeUnavailable(f"creating {name}: {exc}") from exc

    def start_container(self, container_id: str) -> None:
        try:
            self.api.start(container_id)
        except docker.errors.APIError as exc:
            raise StartContainerError(_explain(exc)) from exc
        except (docker.errors.DockerException, OSError) as exc:
            raise RuntimeUnavailable(f"starting {container_id[:12]}: {exc}") from exc

    def stop_container(self, container_id: str, grace_seconds: float) -> None:
        with _translated(f"stopping {container_id[:12]}"):
            try:
                self.api.stop(container_id, timeout=max(0, math.ceil(grace_seconds)))
            except docker.errors.NotFound:
                pass

    def remove_container(self, container_id: str) -> None:
        with _translated(f"removing {container_id[:12]}"):
            try:
                self.api.remove_container(container_id, v=True, force=True)
            except docker.errors.APIError as exc:
                if exc.status_code not in (404, 409):  # gone already, or a removal already in progress
                    raise

    # ---- termination messages ----

    def _termination_message(self, identity: L.Identity, inspect: Mapping[str, Any]) -> str:
        """The file at terminationMessagePath (the kubelet bind-mounts it from the pod directory), copied
        out of the exited container; the log tail with FallbackToLogsOnError when that is empty."""
        message = b""
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
        with _translated(f"exec in {container_id[:12]}"):
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
        with _translated(f"exec in {container_id[:12]}"):
            exit_code = self.api.exec_inspect(exec_id).get("ExitCode")
        return ExecResult(exit_code=-1 if exit_code is None else int(exit_code), output=result.get("output", b""))

    def exec_stream(self, container_id: str, argv: list[str], *, stdin: bool, tty: bool) -> ContainerStream:
        with _translated(f"exec in {container_id[:12]}"):
            exec_id = self.api.exec_create(container_id, argv, stdin=stdin, tty=tty, stdout=True, stderr=True)["Id"]
            raw = self.api.exec_start(exec_id, socket=True, tty=tty)

        def exit_code() -> int | None:
            deadline = time.monotonic() + EXIT_CODE_WAIT
            while True:  # the output ends a moment before Docker records the process as ended
                with _translated(f"exec in {container_id[:12]}"):
                    info = self.api.exec_inspect(exec_id)
                if not info.get("Running") or time.monotonic() > deadline:
                    code = info.get("ExitCode")
                    return None if code is None or info.get("Running") else int(code)
                time.sleep(0.02)

        def resize(width: int, height: int) -> None:
            with _translated(f"resizing exec in {container_id[:12]}"):
                self.api.exec_resize(exec_id, height=height, width=width)

        return _hijacked(raw, multiplexed=not tty, resize=resize, exit_code=exit_code)

    def attach_stream(self, container_id: str, *, stdin: bool) -> ContainerStream:
        with _translated(f"attach to {container_id[:12]}"):
            tty = bool((self.api.inspect_container(container_id).get("Config") or {}).get("Tty"))
            raw = self.api.attach_socket(container_id, params={"stdin": int(stdin), "stdout": 1, "stderr": 1,
                                                               "stream": 1})

        def resize(width: int, height: int) -> None:
            with _translated(f"resizing {container_id[:12]}"):
                self.api.resize(container_id, height=height, width=width)

        return _hijacked(raw, multiplexed=not tty, resize=resize, exit_code=lambda: None)

    def logs(
        self,
        container_id: str,
        *,
        tail: int | None = None,
        timestamps: bool = False,
        follow: bool = False,
        since: float | None = None,
    ) -> bytes | Iterator[bytes]:
        with _translated(f"logs of {container_id[:12]}"):
            logs: bytes | Iterator[bytes] = self.api.logs(
                container_id, stdout=True, stderr=True, stream=follow, follow=follow, timestamps=timestamps,
                tail="all" if tail is None else tail, since=since)
            return logs

    # ---- images ----

    def _image_id(self, image: str) -> str | None:
        try:
            image_id: str = self.api.inspect_image(image)["Id"]
            return image_id
        except docker.errors.ImageNotFound:
            return None
        except docker.errors.APIError as exc:
            raise ImageInspectError(f'failed to inspect image "{image}": {_explain(exc)}') from exc
        except (docker.errors.DockerException, OSError) as exc:
            raise RuntimeUnavailable(f'inspecting image "{image}": {exc}') from exc

    def image_ref(self, image: str) -> str | None:
        split_reference(image)  # InvalidImageName before asking the engine
        return self._image_id(image)

    def pull_image(self, image: str, auth: RegistryAuth | None) -> PulledImage:
        repository, tag = split_reference(image)
        auth_config = None if auth is None else {
            "username": auth.username, "password": auth.password, "email": auth.email,
            "serveraddress": auth.server_address}
        try:
            for line in self.api.pull(repository, tag=tag, stream=True, decode=True, auth_config=auth_config):
                if isinstance(line, dict) and line.get("error"):
                    raise ImagePullError(str(line["error"]))
        except docker.errors.APIError as exc:
            raise ImagePullError(_explain(exc)) from exc
        except (docker.errors.DockerException, OSError) as exc:
            raise RuntimeUnavailable(f'pulling image "{image}": {exc}') from exc
        try:
            inspected = self.api.inspect_image(image)
        except docker.errors.ImageNotFound as exc:
            raise ImagePullError(f'pull of "{image}" reported success but the image is missing') from exc
        except (docker.errors.DockerException, OSError) as exc:
            raise ImageInspectError(f'failed to inspect image "{image}": {exc}') from exc
        return PulledImage(inspected["Id"], int(inspected.get("Size") or 0))

    def images(self) -> list[ImageRecord]:
        with _translated("listing images"):
            items = self.api.images()
        return [
            ImageRecord(
                id=item["Id"],
                repo_tags=tuple(t for t in item.get("RepoTags") or () if t != "<none>:<none>"),
                repo_digests=tuple(d for d in item.get("RepoDigests") or () if d != "<none>@<none>"),
                size=int(item.get("Size", 0)),
                created=int(item.get("Created", 0)),
            )
            for item in items
        ]

    def image_ids_in_use(self) -> set[str]:
        """The image of every container on the engine, ours or not, running or not: Docker refuses to
        remove an image a container still has, and the image GC must not try."""
        with _translated("listing containers"):
            return {entry["ImageID"] for entry in self.api.containers(all=True) if entry.get("ImageID")}

    def remove_image(self, image_id: str, tags: tuple[str, ...]) -> None:
        """Remove an image without force (an image some container uses stays). An image with several tags
        is removed tag by tag, as the dockershim did: removing it by id would be refused."""
        with _translated(f"removing image {image_id}"):
            for ref in tags if len(tags) > 1 else (image_id,):
                try:
                    self.api.remove_image(ref)
                except docker.errors.NotFound:
                    pass

    def image_fs_path(self) -> str:
        """Docker's data root (`docker info` DockerRootDir): the filesystem the image GC watches."""
        with _translated("docker info"):
            return str(self.api.info()["DockerRootDir"])

    def stats(self, container_id: str) -> ContainerStats | None:
        """One sample (`one_shot`: the engine skips its second sample, so this does not wait ~1 s)."""
        try:
            with _translated(f"stats of {container_id[:12]}"):
                raw = self.api.stats(container_id, stream=False, one_shot=True)
        except (ContainerNotFound, RuntimeOperationError):  # gone, or not running: no sample
            return None
        return container_stats(raw)


def container_stats(raw: Mapping[str, Any]) -> ContainerStats:
    """Docker's stats document → ContainerStats. The working set is usage minus inactive file pages
    (cgroup v1 `total_inactive_file`, v2 `inactive_file`), floored at 0, as upstream's cadvisor and CRI
    stats compute it; rss is v1 `total_rss` or v2 `anon`."""
    memory = raw.get("memory_stats") or {}
    detail = memory.get("stats") or {}
    usage = int(memory.get("usage", 0))
    inactive = int(detail.get("total_inactive_file", detail.get("inactive_file", 0)))
    return ContainerStats(
        cpu_usage_ns=int(((raw.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage", 0)),
        memory_usage_bytes=usage,
        memory_limit_bytes=int(memory.get("limit", 0)),
        memory_working_set_bytes=max(0, usage - inactive),
        memory_rss_bytes=int(detail.get("total_rss", detail.get("anon", 0))),
        page_faults=int(detail.get("total_pgfault", detail.get("pgfault", 0))),
        major_page_faults=int(detail.get("total_pgmajfault", detail.get("pgmajfault", 0))),
    )
