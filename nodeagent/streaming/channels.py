"""The WebSocket channel protocols of exec and attach, and Docker's multiplexed stream (pure, no I/O).

Upstream: k8s.io/apimachinery/pkg/util/httpstream/wsstream (conn.go: one byte of channel number before
every binary message's data), k8s.io/apimachinery/pkg/util/remotecommand/constants.go (protocol names,
`StreamClose` = 255 in v5), k8s.io/client-go/tools/remotecommand (what kubectl and client-go send and
expect: stdin 0, stdout 1, stderr 2, error 3, resize 4), pkg/kubelet/cri/streaming/remotecommand/
{exec,httpstream}.go (the Status written to the error channel: Success, or Failure with reason
NonZeroExitCode and a cause of type ExitCode carrying the code).

Served: `v5.channel.k8s.io` (kubectl ≥ 1.30) and `v4.channel.k8s.io` (the official Python client's
`stream()`); both binary. The base64 variants (`base64.channel.k8s.io`, text messages) and v1-v3 (no
resize, no Status on the error channel) are not offered: no current client needs them.

Docker multiplexes a non-TTY exec or attach stream as frames of an 8-byte header — stream type (1
stdout, 2 stderr), three zero bytes, payload length big-endian u32 — followed by the payload; `Demuxer`
cuts a byte stream at arbitrary points into (channel, data) pairs.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
PROTOCOLS = (V5, V4)  # preference order (aiohttp picks the first of ours the client offers)

STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4
CLOSE = 255  # v5: [255, channel] says the client closed that channel (stdin EOF)


def encode(channel: int, data: bytes) -> bytes:
    """One binary WebSocket message carrying `data` on `channel`."""
    return bytes((channel,)) + data


@dataclass(frozen=True)
class Message:
    """A decoded client message: data on a channel, or (v5) the close of one (`closed` true, no data)."""

    channel: int
    data: bytes = b""
    closed: bool = False


def decode(message: bytes, protocol: str) -> Message | None:
    """What a client's binary message says; None for an empty message (upstream skips those) or a
    malformed close."""
    if not message:
        return None
    if protocol == V5 and message[0] == CLOSE:
        return Message(channel=message[1], closed=True) if len(message) == 2 else None
    return Message(channel=message[0], data=bytes(message[1:]))


def parse_resize(data: bytes) -> tuple[int, int] | None:
    """(width, height) from the resize channel's JSON `{"Width": w, "Height": h}`; None if malformed."""
    try:
        size = json.loads(data)
        width, height = size["Width"], size["Height"]
    except (ValueError, TypeError, KeyError):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 65536 for v in (width, height)):
        return None
    return width, height


def exit_status(exit_code: int | None, argv: list[str] | None = None) -> dict[str, Any]:
    """The Status the error channel carries when the command ends (v4 and v5 alike)."""
    if exit_code == 0:
        return {"metadata": {}, "status": "Success"}
    if exit_code is None:
        return {"metadata": {}, "status": "Failure", "message": "the exit code of the command is unknown",
                "reason": "InternalError"}
    command = " ".join(argv or [])
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command [{command}], "
                       f"exit code {exit_code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(exit_code)}]}}


def error_status(message: str) -> dict[str, Any]:
    """A failure before or while running the command (container gone, runtime error)."""
    return {"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError", "code": 500}


def status_bytes(status: dict[str, Any]) -> bytes:
    return json.dumps(status, separators=(",", ":")).encode()


_HEADER = struct.Struct(">BxxxI")
_DOCKER_CHANNELS = {0: STDOUT, 1: STDOUT, 2: STDERR}  # Docker's stdin (0) never appears in output; be lenient


class Demuxer:
    """Incremental parser of Docker's multiplexed stream: `feed` any bytes, get the complete payloads."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._buffer += data
        out: list[tuple[int, bytes]] = []
        while len(self._buffer) >= _HEADER.size:
            kind, size = _HEADER.unpack_from(self._buffer)
            if len(self._buffer) < _HEADER.size + size:
                break
            payload = bytes(self._buffer[_HEADER.size:_HEADER.size + size])
            del self._buffer[:_HEADER.size + size]
            if payload:
                out.append((_DOCKER_CHANNELS.get(kind, STDERR), payload))
        return out

    @property
    def pending(self) -> int:
        """Bytes held for an incomplete frame (non-zero at EOF means the stream was cut)."""
        return len(self._buffer)


def docker_frame(kind: int, payload: bytes) -> bytes:
    """One frame as Docker writes it (tests and fakes)."""
    return _HEADER.pack(kind, len(payload)) + payload
