"""The WebSocket channel protocols of exec and attach, and Docker's multiplexed stream (pure, no I/O).

Upstream: k8s.io/apimachinery/pkg/util/httpstream/wsstream/conn.go (the subprotocol is the first of the
client's offers the server speaks, in the client's order, and no offer at all means `channel.k8s.io`'s
framing; a message is one byte of channel number and the data, or with the base64 protocols a text
message of the channel as an ASCII digit and the data in standard base64; the server reads text and
binary messages alike and skips empty ones; in v5, `[255, channel]` closes that channel),
pkg/kubelet/cri/streaming/remotecommand/websocket.go (the protocols a kubelet serves: `channel.k8s.io`,
`base64.channel.k8s.io`, `v4.channel.k8s.io`, `v4.base64.channel.k8s.io`, and none; an empty message on
the lowest channel the client reads says the connection is up; v4 writes a Status on the error channel
when the command ends, success included, the older ones only a failure's message),
k8s.io/apimachinery/pkg/util/remotecommand/constants.go (`v5.channel.k8s.io`, `StreamClose` = 255),
k8s.io/client-go/tools/remotecommand (stdin 0, stdout 1, stderr 2, error 3, resize 4),
pkg/kubelet/cri/streaming/remotecommand/exec.go (the Status: Success, or Failure with reason
NonZeroExitCode and a cause of type ExitCode carrying the code).

Departure: upstream's kubelet speaks v1-v4 only and its API server ends v5 (apiserver
pkg/util/proxy/streamtranslator.go, translating it to SPDY); here the kubelet speaks v5 as well, with v4's
Status, and the API server passes every protocol through.

Docker multiplexes a non-TTY exec or attach stream as frames of an 8-byte header — stream type (1
stdout, 2 stderr), three zero bytes, payload length big-endian u32 — followed by the payload; `Demuxer`
cuts a byte stream at arbitrary points into (channel, data) pairs.

A client's WebSocket message is at most MAX_MESSAGE_BYTES (upstream's x/net/websocket
DefaultMaxPayloadBytes); a larger one closes the connection with 1009 Message Too Big.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
V4_BASE64 = "v4.base64.channel.k8s.io"
BASE64 = "base64.channel.k8s.io"
V1 = "channel.k8s.io"

STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4
CLOSE = 255  # v5: [255, channel] says the client closed that channel (stdin EOF)
MAX_MESSAGE_BYTES = 32 * 1024 * 1024  # upstream's x/net/websocket DefaultMaxPayloadBytes


def encode(channel: int, data: bytes) -> bytes:
    """One binary WebSocket message carrying `data` on `channel`."""
    return bytes((channel,)) + data


@dataclass(frozen=True)
class Message:
    """A decoded client message: data on a channel, or (v5) the close of one (`closed` true, no data)."""

    channel: int
    data: bytes = b""
    closed: bool = False


@dataclass(frozen=True)
class Protocol:
    """One channel subprotocol (`name` "" when the client offered none)."""

    name: str
    base64: bool  # text messages: channel digit + base64 data
    status: bool  # v4 and later: a Status on the error channel at the end, success included
    stream_close: bool  # v5: the client can close one channel

    def encode(self, channel: int, data: bytes) -> bytes | str:
        """One message carrying `data` on `channel`: bytes for a binary message, str for a text one."""
        if self.base64:
            return chr(ord("0") + channel) + base64.b64encode(data).decode("ascii")
        return encode(channel, data)

    def decode(self, message: bytes) -> Message | None:
        """What a client's message says (a text message's UTF-8 bytes, or a binary one's); None for an empty
        message, a malformed close or undecodable base64 (upstream skips all three)."""
        if not message:
            return None
        if self.stream_close and message[0] == CLOSE:
            return Message(channel=message[1], closed=True) if len(message) == 2 else None
        if not self.base64:
            return Message(channel=message[0], data=bytes(message[1:]))
        try:
            data = base64.b64decode(bytes(message[1:]), validate=True)
        except binascii.Error:
            return None
        return Message(channel=(message[0] - ord("0")) % 256, data=data)

    def final(self, status: dict[str, Any]) -> bytes | None:
        """What the error channel carries when the command ends: the Status (v4, v5), or only a failure's
        message (older protocols)."""
        if self.status:
            return status_bytes(status)
        return None if status.get("status") == "Success" else str(status.get("message", "")).encode()


PROTOCOLS = {p.name: p for p in (
    Protocol(V5, base64=False, status=True, stream_close=True),
    Protocol(V4, base64=False, status=True, stream_close=False),
    Protocol(V4_BASE64, base64=True, status=True, stream_close=False),
    Protocol(BASE64, base64=True, status=False, stream_close=False),
    Protocol(V1, base64=False, status=False, stream_close=False),
    Protocol("", base64=False, status=False, stream_close=False),
)}
NAMES = (V5, V4, V4_BASE64, BASE64, V1)  # what a client can ask for by name


def negotiate(offered: Sequence[str]) -> Protocol | None:
    """The first of the client's offers that is served (the client's order, as upstream's handshake); the
    unnamed protocol when it offered none; None when it offered only protocols not served."""
    if not offered:
        return PROTOCOLS[""]
    return next((PROTOCOLS[name] for name in offered if name and name in PROTOCOLS), None)


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
