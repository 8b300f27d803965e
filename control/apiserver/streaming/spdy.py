"""SPDY/3.1 framing (pure, no I/O): the frames kubectl's streaming connections use, the zlib header block
with SPDY/3's dictionary, and flow-control windows.

Upstream: the SPDY/3 and 3.1 drafts (draft-mbelshe-httpbis-spdy-00 and the chromium.org protocol pages),
as implemented by github.com/moby/spdystream/spdy (types.go, read.go, write.go, dictionary.go), which
client-go's k8s.io/apimachinery/pkg/util/httpstream/spdy uses on both ends.

Frames: a control frame is `1 | version(15) | type(16) | flags(8) | length(24) | payload`; a data frame is
`0 | stream id(31) | flags(8) | length(24) | data`. Header blocks (SYN_STREAM, SYN_REPLY, HEADERS) are a
count and length-prefixed name/value pairs (32-bit lengths in SPDY/3), compressed with zlib seeded with
the 1423-byte SPDY/3 dictionary; each direction keeps one compression context for the whole connection and
flushes with Z_SYNC_FLUSH at the end of every block.

Flow control (SPDY/3.1): every stream and the connection (stream 0) start with a 64 KiB send window; data
sent shrinks it and the peer's WINDOW_UPDATE grows it. `Window` is that arithmetic; the connection code
decides when to wait for it.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

VERSION = 3
INITIAL_WINDOW = 64 * 1024
MAX_DATA = 0xFFFFFF  # a frame's 24-bit length
# The most one header block may inflate to (Go's http.DefaultMaxHeaderBytes, the bound upstream's HTTP
# servers put on a request's headers): kubectl's blocks are a few hundred bytes.
MAX_HEADER_BLOCK = 1 << 20

FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02

SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
SETTINGS_INITIAL_WINDOW_SIZE = 7

# RST_STREAM status codes
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, CANCEL, INTERNAL_ERROR = 1, 2, 3, 5, 6


def _dictionary() -> bytes:
    """The SPDY/3 header compression dictionary (the draft's section 2.6.10.1): length-prefixed words, then a
    run of status codes, reason phrases, dates and common values; 1423 bytes."""
    words = ("options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
             "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
             "content-base", "content-encoding", "content-language", "content-length", "content-location",
             "content-md5", "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host",
             "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since",
             "last-modified", "location", "max-forwards", "pragma", "proxy-authenticate",
             "proxy-authorization", "range", "referer", "retry-after", "server", "te", "trailer",
             "transfer-encoding", "upgrade", "user-agent", "vary", "via", "warning", "www-authenticate",
             "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie",
             "keep-alive", "origin")
    tail = ("100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
            "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
            "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
            "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
            "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
            "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,"
            "deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
    return b"".join(struct.pack(">I", len(w)) + w.encode() for w in words) + tail.encode()


DICTIONARY = _dictionary()


class ProtocolError(Exception):
    """The peer sent something that is not SPDY/3(.1); the connection cannot go on."""


Headers = dict[str, str]  # names lower-case; several values joined by NUL, as on the wire


@dataclass(frozen=True)
class Data:
    stream_id: int
    data: bytes
    fin: bool = False


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: Headers
    associated_id: int = 0
    priority: int = 0
    fin: bool = False
    unidirectional: bool = False


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    fin: bool = False


@dataclass(frozen=True)
class HeadersFrame:
    stream_id: int
    headers: Headers
    fin: bool = False


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Settings:
    values: dict[int, int]  # setting id → value (per-setting flags are not kept)


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_good_stream_id: int
    status: int = 0


@dataclass(frozen=True)
class WindowUpdate:
    stream_id: int
    delta: int


Frame = Data | SynStream | SynReply | HeadersFrame | RstStream | Settings | Ping | GoAway | WindowUpdate


class HeaderCompressor:
    """One direction's header compression context (lives as long as the connection)."""

    def __init__(self) -> None:
        self._z = zlib.compressobj(zdict=DICTIONARY)

    def compress(self, headers: Headers) -> bytes:
        block = struct.pack(">I", len(headers)) + b"".join(
            struct.pack(">I", len(n)) + n + struct.pack(">I", len(v)) + v
            for n, v in ((name.lower().encode(), value.encode()) for name, value in headers.items()))
        return self._z.compress(block) + self._z.flush(zlib.Z_SYNC_FLUSH)


class HeaderDecompressor:
    def __init__(self) -> None:
        self._z = zlib.decompressobj(zdict=DICTIONARY)

    def decompress(self, data: bytes) -> Headers:
        """The headers of one block; a block that inflates past MAX_HEADER_BLOCK (a zlib bomb: a few KiB of
        frame can inflate to gigabytes) is a ProtocolError, found without inflating more than that."""
        try:
            block = self._z.decompress(data, MAX_HEADER_BLOCK + 1)
        except zlib.error as exc:
            raise ProtocolError(f"bad header block: {exc}") from None
        if len(block) > MAX_HEADER_BLOCK or self._z.unconsumed_tail:
            raise ProtocolError(f"header block larger than {MAX_HEADER_BLOCK} bytes")
        try:
            (count,), offset = struct.unpack_from(">I", block), 4
            headers: Headers = {}
            for _ in range(count):
                (size,) = struct.unpack_from(">I", block, offset)
                name = block[offset + 4:offset + 4 + size].decode().lower()
                offset += 4 + size
                (size,) = struct.unpack_from(">I", block, offset)
                value = block[offset + 4:offset + 4 + size].decode()
                offset += 4 + size
                if offset > len(block):
                    raise ProtocolError("truncated header block")
                headers[name] = value
        except (struct.error, UnicodeDecodeError) as exc:
            raise ProtocolError(f"bad header block: {exc}") from None
        return headers


def _control(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def encode(frame: Frame, compressor: HeaderCompressor) -> bytes:
    """The wire bytes of `frame` (header blocks through the connection's compressor, so order matters)."""
    match frame:
        case Data(stream_id, data, fin):
            if len(data) > MAX_DATA:
                raise ValueError("data frame too large")
            return struct.pack(">II", stream_id & 0x7FFFFFFF, (FLAG_FIN if fin else 0) << 24 | len(data)) + data
        case SynStream(stream_id, headers, associated_id, priority, fin, unidirectional):
            flags = (FLAG_FIN if fin else 0) | (FLAG_UNIDIRECTIONAL if unidirectional else 0)
            return _control(SYN_STREAM, flags, struct.pack(">IIBB", stream_id, associated_id, priority << 5, 0)
                            + compressor.compress(headers))
        case SynReply(stream_id, headers, fin):
            return _control(SYN_REPLY, FLAG_FIN if fin else 0,
                            struct.pack(">I", stream_id) + compressor.compress(headers))
        case HeadersFrame(stream_id, headers, fin):
            return _control(HEADERS, FLAG_FIN if fin else 0,
                            struct.pack(">I", stream_id) + compressor.compress(headers))
        case RstStream(stream_id, status):
            return _control(RST_STREAM, 0, struct.pack(">II", stream_id, status))
        case Settings(values):
            return _control(SETTINGS, 0, struct.pack(">I", len(values)) + b"".join(
                struct.pack(">II", key & 0xFFFFFF, value) for key, value in values.items()))
        case Ping(ping_id):
            return _control(PING, 0, struct.pack(">I", ping_id))
        case GoAway(last, status):
            return _control(GOAWAY, 0, struct.pack(">II", last, status))
        case WindowUpdate(stream_id, delta):
            return _control(WINDOW_UPDATE, 0, struct.pack(">II", stream_id, delta))
    raise TypeError(f"not a frame: {frame!r}")


class FrameReader:
    """Incremental parser: `feed` bytes cut anywhere, get the complete frames. Unknown control frame types
    (NOOP, CREDENTIAL) are skipped, as the spec asks."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._headers = HeaderDecompressor()

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while len(self._buffer) >= 8:
            first, flags_length = struct.unpack_from(">II", self._buffer)
            length = flags_length & 0xFFFFFF
            if len(self._buffer) < 8 + length:
                break
            flags, payload = flags_length >> 24, bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            if first & 0x80000000:
                frame = self._control((first >> 16) & 0x7FFF, first & 0xFFFF, flags, payload)
                if frame is not None:
                    frames.append(frame)
            else:
                frames.append(Data(first, payload, bool(flags & FLAG_FIN)))
        return frames

    def _control(self, version: int, kind: int, flags: int, payload: bytes) -> Frame | None:
        if version != VERSION:
            raise ProtocolError(f"unsupported SPDY version {version}")
        fin = bool(flags & FLAG_FIN)
        try:
            if kind == SYN_STREAM:
                stream_id, associated, priority = struct.unpack_from(">IIB", payload)
                return SynStream(stream_id & 0x7FFFFFFF, self._headers.decompress(payload[10:]),
                                 associated & 0x7FFFFFFF, priority >> 5, fin, bool(flags & FLAG_UNIDIRECTIONAL))
            if kind in (SYN_REPLY, HEADERS):
                (stream_id,) = struct.unpack_from(">I", payload)
                headers = self._headers.decompress(payload[4:])
                if kind == SYN_REPLY:
                    return SynReply(stream_id & 0x7FFFFFFF, headers, fin)
                return HeadersFrame(stream_id & 0x7FFFFFFF, headers, fin)
            if kind == RST_STREAM:
                stream_id, status = struct.unpack_from(">II", payload)
                return RstStream(stream_id & 0x7FFFFFFF, status)
            if kind == SETTINGS:
                (count,) = struct.unpack_from(">I", payload)
                entries = (struct.unpack_from(">II", payload, 4 + 8 * i) for i in range(count))
                return Settings({key & 0xFFFFFF: value for key, value in entries})
            if kind == PING:
                return Ping(struct.unpack_from(">I", payload)[0])
            if kind == GOAWAY:
                last = struct.unpack_from(">I", payload)[0]
                status = struct.unpack_from(">I", payload, 4)[0] if len(payload) >= 8 else 0
                return GoAway(last & 0x7FFFFFFF, status)
            if kind == WINDOW_UPDATE:
                stream_id, delta = struct.unpack_from(">II", payload)
                return WindowUpdate(stream_id & 0x7FFFFFFF, delta & 0x7FFFFFFF)
        except struct.error:
            raise ProtocolError(f"truncated control frame of type {kind}") from None
        return None


def chunks(data: bytes, size: int) -> Iterable[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


@dataclass
class Window:
    """A send window: how many bytes may go now; `consume` what was sent, `grow` by the peer's updates.
    `active` turns true once the peer has sent a WINDOW_UPDATE: spdystream (client-go) keeps no windows and
    sends none, so a window is only enforced against a peer that shows it does flow control."""

    size: int = INITIAL_WINDOW
    active: bool = False

    def allowance(self, wanted: int) -> int:
        return wanted if not self.active else max(0, min(wanted, self.size))

    def consume(self, sent: int) -> None:
        self.size -= sent

    def grow(self, delta: int) -> None:
        self.size += delta
        self.active = True
