"""Container logs on the kubelet: which container instance a request reads, timestamps as upstream writes
them, and how the kubelet's log rotation settings reach Docker. All pure; nodeagent/server.py does the I/O.

Upstream: pkg/kubelet/kubelet_pods.go `validateContainerLogStatus` (the instance from the pod status the
kubelet itself last generated: the running one, else the terminated one, else lastState's; `previous`
is lastState.terminated; the messages are upstream's), pkg/kubelet/kuberuntime/logs/logs.go (each line
prefixed with its time as `time.RFC3339Nano`, which drops trailing zeros of the fraction), and
pkg/kubelet/logs/container_log_manager.go (`containerLogMaxSize`, `containerLogMaxFiles`).

Rotation departs in mechanism, not in effect: upstream's kubelet rotates the CRI runtime's log files
itself; slimkube's logs are Docker's, so the two KubeletConfiguration fields become the `json-file` log
driver's `max-size`/`max-file` on every container at create (`log_config`), and Docker rotates (and still
reads across the rotated files for `docker logs`). The dockershim left rotation to dockerd's daemon-wide
`log-opts` instead and ignored the two fields. Rotated files are not compressed (upstream gzips them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

DEFAULT_MAX_SIZE = 10 * 1024 * 1024  # containerLogMaxSize "10Mi"
DEFAULT_MAX_FILES = 5  # containerLogMaxFiles
LOG_DRIVER = "json-file"

# Docker's prefix with `timestamps`: RFC3339NanoFixed ("2006-01-02T15:04:05.000000000Z07:00") and a space.
_DOCKER_STAMP = re.compile(rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d) ")


class LogUnavailable(Exception):
    """No instance of the container has a log to read; the message is upstream's (the kubelet answers 400)."""


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _terminated_id(state: Mapping[str, Any]) -> str:
    return str(_mapping(state.get("terminated")).get("containerID") or "")


def _runtime_id(container_id: str) -> str:
    """`docker://<id>` → `<id>` (upstream ParseContainerID keeps the part after `://`)."""
    return container_id.split("://", 1)[1] if "://" in container_id else container_id


def log_container_id(pod_name: str, container: str, status: Mapping[str, Any], *, previous: bool) -> str:
    """The runtime id of the instance whose log to read (upstream validateContainerLogStatus); raises
    LogUnavailable when there is none."""
    found = None
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        found = next((s for s in status.get(key) or [] if isinstance(s, Mapping) and s.get("name") == container),
                     None)
        if found is not None:
            break
    where = f'container "{container}" in pod "{pod_name}"'
    if found is None:
        raise LogUnavailable(f"{where} is not available")
    state, last = _mapping(found.get("state")), _mapping(found.get("lastState"))
    if previous:
        if not _terminated_id(last):
            raise LogUnavailable(f'previous terminated container "{container}" in pod "{pod_name}" not found')
        return _runtime_id(_terminated_id(last))
    if state.get("running") is not None:
        return _runtime_id(str(found.get("containerID") or ""))
    if state.get("terminated") is not None or last.get("terminated") is not None:
        chosen = _terminated_id(state) or _terminated_id(last)
        if not chosen:
            raise LogUnavailable(f"{where} is terminated")
        return _runtime_id(chosen)
    waiting = state.get("waiting")
    if isinstance(waiting, Mapping):
        reason = waiting.get("reason") or ""
        if reason == "ErrImagePull":
            raise LogUnavailable(f"{where} is waiting to start: image can't be pulled")
        if reason == "ImagePullBackOff":
            raise LogUnavailable(f"{where} is waiting to start: trying and failing to pull image")
        raise LogUnavailable(f"{where} is waiting to start: {reason}")
    raise LogUnavailable(f"{where} is waiting to start - no logs yet")


def rfc3339nano(stamp: re.Match[bytes]) -> bytes:
    """Docker's fixed nine-digit fraction as Go's RFC3339Nano: trailing zeros dropped, and the dot with them."""
    seconds, fraction, zone = stamp.group(1), (stamp.group(2) or b"").rstrip(b"0"), stamp.group(3)
    return seconds + (b"." + fraction if fraction else b"") + zone + b" "


def restamp(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Rewrite the time at the start of every line of a timestamped Docker log, whatever the chunking
    (a stream yields one frame per line; a whole log is one chunk). A line split across chunks has its
    stamp in the first, where the stamp is whole: Docker writes stamp and line in one frame."""
    at_line_start = True
    for chunk in chunks:
        if not chunk:
            continue
        out = []
        for line in chunk.splitlines(keepends=True):
            if at_line_start:
                line = _DOCKER_STAMP.sub(rfc3339nano, line, count=1) if _DOCKER_STAMP.match(line) else line
            out.append(line)
            at_line_start = line.endswith(b"\n")
        yield b"".join(out)


def limit(chunks: Iterable[bytes], limit_bytes: int | None) -> Iterator[bytes]:
    """At most `limit_bytes` of `chunks` (limitBytes counts what is sent, timestamps included), stopping
    the iteration at the limit so a followed log ends there."""
    left = limit_bytes
    for chunk in chunks:
        if left is None:
            yield chunk
            continue
        yield chunk[:left]
        left -= min(left, len(chunk))
        if left == 0:
            return


def log_config(max_size: int, max_files: int) -> dict[str, Any]:
    """Docker's LogConfig for a pod container: the json-file driver rotating at `max_size` bytes and keeping
    `max_files` files (the live one included, as containerLogMaxFiles counts)."""
    return {"type": LOG_DRIVER, "config": {"max-size": str(max_size), "max-file": str(max_files)}}
