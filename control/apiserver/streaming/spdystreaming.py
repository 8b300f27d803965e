"""`pods/exec`, `pods/attach`, `pods/portforward` over SPDY/3.1 (kubectl ≤ 1.29 for exec/attach/cp, every
kubectl's `port-forward`), translated to the kubelet's WebSocket endpoints.

Upstream: k8s.io/apimachinery/pkg/util/httpstream/spdy (the `Upgrade: SPDY/3.1` handshake, protocol
negotiation through `X-Stream-Protocol-Version`), pkg/kubelet/cri/streaming/remotecommand/httpstream.go
(one client-created stream per `streamType`: error, stdin, stdout, stderr, resize; the Status written on
the error stream at the end) and pkg/kubelet/cri/streaming/portforward/httpstream.go (per forwarded
connection a pair of streams, `streamType` data and error, with `port` and `requestID` headers).
Upstream's API server splices the upgraded connection to the kubelet, which speaks SPDY itself; here the
kubelet speaks WebSocket only, so the API server ends the SPDY connection and translates:

- exec/attach: one WebSocket to the kubelet (`v5.channel.k8s.io`, so stdin's FIN becomes a channel close
  and `echo hi | kubectl exec -i … cat` ends); stream type → channel byte (stdin 0, stdout 1, stderr 2,
  error 3, resize 4; resize's JSON lines cut into one message each). Kubelet data for a stream the client
  has not opened yet waits for it. When the kubelet closes, every stream gets a FIN, then GOAWAY.
- port-forward: one kubelet WebSocket (`/portForward/NS/POD?ports=PORT`) per request id, opened when both
  streams of the pair exist; its port-prefix messages are dropped, channel 0 ↔ the data stream, channel 1 →
  the error stream. When the pod's side ends, both streams get a FIN. The SPDY connection lasts until the
  client closes it.

kubectl ≥ 1.31's port-forward tunnels the same SPDY connection inside a WebSocket (subprotocol
`SPDY/3.1+portforward.k8s.io`, SPDY bytes in binary messages, upstream streamtunnel.go); `serve_tunnel`
runs the same port-forward translation over it. A kubectl whose tunnel is refused falls back to the plain
SPDY upgrade.

Departures: only `v4.channel.k8s.io` is offered for exec/attach over SPDY (kubectl ≥ 1.5 offers it);
v1-v3 are not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp
from aiohttp import WSMsgType, web

from control.apiserver import status
from control.apiserver.status import APIError
from control.apiserver.streaming import spdy
from control.apiserver.streaming.kubeletclient import MAX_MESSAGE_BYTES, KubeletClient, NodeConnection

log = logging.getLogger(__name__)
UPGRADE = "SPDY/3.1"
EXEC_PROTOCOLS = ("v4.channel.k8s.io",)
PORTFORWARD_PROTOCOL = "portforward.k8s.io"
TUNNEL_PROTOCOL = "SPDY/3.1+" + PORTFORWARD_PROTOCOL
KUBELET_EXEC_PROTOCOL = "v5.channel.k8s.io"
CHANNELS = {"stdin": 0, "stdout": 1, "stderr": 2, "error": 3, "resize": 4}
STDIN, RESIZE, CLOSE = 0, 4, 255
CHUNK = 16 * 1024
WRITE_BUFFER_LIMIT = 1 << 20
STREAM_WAIT = 5.0  # how long data for a stream the client has not opened yet is kept at the end
CLOSE_TIMEOUT = 1.0  # how long the tunnel's close waits for kubectl's answering close frame


def is_spdy_upgrade(request: web.Request) -> bool:
    return (request.headers.get("Upgrade", "").strip().lower() == UPGRADE.lower()
            and "upgrade" in request.headers.get("Connection", "").lower())


def offered_versions(request: web.Request) -> list[str]:
    return [p.strip() for header in request.headers.getall("X-Stream-Protocol-Version", [])
            for p in header.split(",") if p.strip()]


def choose_protocol(subresource: str, offered: list[str]) -> str | None:
    """The stream protocol both sides speak (upstream httpstream.Handshake: the server's preference order);
    None when there is none."""
    supported = (PORTFORWARD_PROTOCOL,) if subresource == "portforward" else EXEC_PROTOCOLS
    return next((p for p in supported if p in offered), None)


class _Feed:
    """Takes the place of aiohttp's payload parser on the upgraded connection: raw bytes into a queue."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.queue.put_nowait(bytes(data))
        return False, b""

    def feed_eof(self) -> None:
        self.queue.put_nowait(None)


class ByteChannel(Protocol):
    """What a SPDY connection runs over: the upgraded HTTP connection, or a WebSocket tunnel."""

    async def write(self, data: bytes) -> None: ...

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def close(self) -> None: ...


class UpgradedHTTP:
    """The raw connection of an upgraded aiohttp request (`_Feed` installed as its payload parser)."""

    def __init__(self, request: web.Request, feed: _Feed) -> None:
        self._request, self._feed = request, feed

    async def write(self, data: bytes) -> None:
        transport = self._request.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("the client closed the connection")
        transport.write(data)
        if transport.get_write_buffer_size() > WRITE_BUFFER_LIMIT:
            await self._request.protocol._drain_helper()

    async def chunks(self) -> AsyncIterator[bytes]:
        while (chunk := await self._feed.queue.get()) is not None:
            yield chunk

    async def close(self) -> None:
        if self._request.transport is not None:
            self._request.transport.close()


class WebSocketTunnel:
    """SPDY bytes in binary WebSocket messages (upstream client-go tools/portforward/tunneling_connection.go:
    every write is one message, reads concatenate messages)."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self._ws = ws

    async def write(self, data: bytes) -> None:
        await self._ws.send_bytes(data)

    async def chunks(self) -> AsyncIterator[bytes]:
        async for message in self._ws:
            if message.type is WSMsgType.BINARY:
                yield bytes(message.data)

    async def close(self) -> None:
        await self._ws.close()


class Connection:
    """One SPDY connection: frames out through one compressor, frames in through one reader; PING
    answered, SETTINGS and WINDOW_UPDATE applied to the send windows, a WINDOW_UPDATE sent for every DATA
    frame received once it is consumed (`consumed`)."""

    def __init__(self, channel: ByteChannel) -> None:
        self._channel = channel
        self._compressor = spdy.HeaderCompressor()
        self._reader = spdy.FrameReader()
        self._initial_window = spdy.INITIAL_WINDOW
        self._windows: dict[int, spdy.Window] = {0: spdy.Window()}
        self._window_changed = asyncio.Event()
        self.closed = False

    async def send(self, frame: spdy.Frame) -> None:
        if self.closed:
            return
        try:
            await self._channel.write(spdy.encode(frame, self._compressor))
        except (ConnectionError, RuntimeError):
            self.closed = True

    async def send_data(self, stream_id: int, data: bytes, *, fin: bool = False) -> None:
        """`data` on the stream in frames the send windows allow (waiting for the peer's updates)."""
        stream = self._windows.setdefault(stream_id, spdy.Window(self._initial_window))
        connection = self._windows[0]
        while data and not self.closed:
            size = connection.allowance(stream.allowance(min(len(data), CHUNK)))
            if size == 0:
                self._window_changed.clear()
                await self._window_changed.wait()
                continue
            chunk, data = data[:size], data[size:]
            stream.consume(size)
            connection.consume(size)
            await self.send(spdy.Data(stream_id, chunk))
        if fin:
            await self.send(spdy.Data(stream_id, b"", fin=True))

    async def consumed(self, stream_id: int, size: int) -> None:
        if size:
            await self.send(spdy.WindowUpdate(stream_id, size))
            await self.send(spdy.WindowUpdate(0, size))

    async def frames(self) -> AsyncIterator[spdy.Frame]:
        """The frames the handlers care about (Data, SynStream, RstStream, GoAway, HeadersFrame)."""
        async for chunk in self._channel.chunks():
            for frame in self._reader.feed(chunk):
                match frame:
                    case spdy.Ping(ping_id):
                        if ping_id % 2 == 1:  # the client's ping (odd ids); ours would be even
                            await self.send(frame)
                    case spdy.Settings(values):
                        if spdy.SETTINGS_INITIAL_WINDOW_SIZE in values:
                            self._initial_window = values[spdy.SETTINGS_INITIAL_WINDOW_SIZE]
                    case spdy.WindowUpdate(stream_id, delta):
                        self._windows.setdefault(stream_id, spdy.Window(self._initial_window)).grow(delta)
                        self._window_changed.set()
                    case _:
                        yield frame

    async def close(self) -> None:
        self.closed = True
        self._window_changed.set()
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._channel.close()



async def serve(request: web.Request, kubelet: KubeletClient, connection: NodeConnection, path: str,
                subresource: str,
                connect: Callable[..., Awaitable[aiohttp.ClientWebSocketResponse]]) -> web.StreamResponse:
    """Answer the SPDY upgrade and translate its streams to the kubelet's WebSocket at `path`.
    `connect(session, url, params, protocols)` opens a kubelet WebSocket, turning refusals into APIErrors."""
    chosen = choose_protocol(subresource, offered_versions(request))
    if chosen is None:
        raise status.bad_request(f"unable to upgrade: no common stream protocol: the client offered "
                                 f"{offered_versions(request)}")
    url = connection.url(path)
    async with kubelet.session() as session:
        upstream = None
        if subresource != "portforward":  # refusals (container not running, …) become HTTP errors first
            upstream = await connect(session, url, request.query, [KUBELET_EXEC_PROTOCOL])
        feed = _Feed()
        response = web.StreamResponse(status=101, headers={"Connection": "Upgrade", "Upgrade": UPGRADE,
                                                            "X-Stream-Protocol-Version": chosen})
        response.force_close()
        request.protocol.set_parser(feed)  # type: ignore[arg-type]  # duck-typed payload parser
        await response.prepare(request)
        conn = Connection(UpgradedHTTP(request, feed))
        try:
            if upstream is not None:
                async with upstream:
                    await _Exec(conn, upstream).run()
            else:
                await _PortForward(conn, lambda params: connect(session, url, params, ["v4.channel.k8s.io"])).run()
        finally:
            await conn.close()
    return response


async def serve_tunnel(request: web.Request, kubelet: KubeletClient, connection: NodeConnection, path: str,
                       connect: Callable[..., Awaitable[aiohttp.ClientWebSocketResponse]]) -> web.StreamResponse:
    """kubectl ≥ 1.31's port-forward: SPDY inside a WebSocket with subprotocol `SPDY/3.1+portforward.k8s.io`
    (upstream apiserver/pkg/util/proxy/streamtunnel.go); no HTTP upgrade inside, the SPDY frames start at
    once."""
    ws = web.WebSocketResponse(protocols=(TUNNEL_PROTOCOL,), max_msg_size=MAX_MESSAGE_BYTES, timeout=CLOSE_TIMEOUT)
    await ws.prepare(request)
    url = connection.url(path)
    async with kubelet.session() as session:
        conn = Connection(WebSocketTunnel(ws))
        try:
            await _PortForward(conn, lambda params: connect(session, url, params, ["v4.channel.k8s.io"])).run()
        finally:
            await conn.close()
    return ws


class _Exec:
    def __init__(self, conn: Connection, upstream: aiohttp.ClientWebSocketResponse) -> None:
        self.conn, self.upstream = conn, upstream
        self.streams: dict[int, int] = {}  # stream id → channel
        self.by_channel: dict[int, int] = {}  # channel → stream id
        self.pending: dict[int, list[bytes]] = {}  # kubelet data for channels without a stream yet
        self.opened = asyncio.Event()
        self.resize = b""

    async def run(self) -> None:
        client = asyncio.create_task(self._from_client())
        try:
            await self._from_kubelet()
        finally:
            client.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, RuntimeError):
                await client
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STREAM_WAIT
        while self.pending and not self.conn.closed and loop.time() < deadline:
            self.opened.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.opened.wait(), deadline - loop.time())
        for stream_id in list(self.streams):
            await self.conn.send_data(stream_id, b"", fin=True)
        await self.conn.send(spdy.GoAway(max(self.streams, default=0)))

    async def _from_kubelet(self) -> None:
        async for message in self.upstream:
            if message.type is not WSMsgType.BINARY or not message.data:
                continue
            channel, data = message.data[0], bytes(message.data[1:])
            stream_id = self.by_channel.get(channel)
            if not data:  # the kubelet's "connected" message: nothing to carry
                continue
            if stream_id is None:
                self.pending.setdefault(channel, []).append(data)
            else:
                await self.conn.send_data(stream_id, data)

    async def _from_client(self) -> None:
        async for frame in self.conn.frames():
            match frame:
                case spdy.SynStream(stream_id, headers):
                    channel = CHANNELS.get(headers.get("streamtype", ""))
                    if channel is None or channel in self.by_channel:
                        await self.conn.send(spdy.RstStream(stream_id, spdy.PROTOCOL_ERROR))
                        continue
                    self.streams[stream_id], self.by_channel[channel] = channel, stream_id
                    await self.conn.send(spdy.SynReply(stream_id))
                    for data in self.pending.pop(channel, []):
                        await self.conn.send_data(stream_id, data)
                    self.opened.set()
                    if frame.fin:
                        await self._client_closed(channel)
                case spdy.Data(stream_id, data, fin):
                    channel = self.streams.get(stream_id)
                    if channel is None:
                        continue
                    if data:
                        await self._to_kubelet(channel, data)
                        await self.conn.consumed(stream_id, len(data))
                    if fin:
                        await self._client_closed(channel)
                case spdy.RstStream(stream_id) if self.streams.get(stream_id) == STDIN:
                    await self._client_closed(STDIN)
        await self.upstream.close()  # the client went away: end the command's streams

    async def _to_kubelet(self, channel: int, data: bytes) -> None:
        if channel != RESIZE:
            await self.upstream.send_bytes(bytes((channel,)) + data)
            return
        self.resize += data  # client-go writes one JSON object per line
        *lines, self.resize = self.resize.split(b"\n")
        for line in lines:
            if line.strip():
                await self.upstream.send_bytes(bytes((RESIZE,)) + line)

    async def _client_closed(self, channel: int) -> None:
        if channel == STDIN and self.upstream.protocol == KUBELET_EXEC_PROTOCOL:
            await self.upstream.send_bytes(bytes((CLOSE, STDIN)))


@dataclass
class _Pair:
    """The two streams of one forwarded connection (upstream portforward httpStreamPair)."""

    port: int
    data: int = 0
    error: int = 0
    task: asyncio.Task[None] | None = None
    upstream: aiohttp.ClientWebSocketResponse | None = None
    backlog: list[bytes] = field(default_factory=list)  # client data before the kubelet answered


class _PortForward:
    def __init__(self, conn: Connection,
                 connect: Callable[[dict[str, str]], Awaitable[aiohttp.ClientWebSocketResponse]]) -> None:
        self.conn, self.connect = conn, connect
        self.pairs: dict[str, _Pair] = {}
        self.by_stream: dict[int, _Pair] = {}

    async def run(self) -> None:
        try:
            async for frame in self.conn.frames():
                match frame:
                    case spdy.SynStream(stream_id, headers):
                        await self._open(stream_id, headers)
                    case spdy.Data(stream_id, data, _):
                        pair = self.by_stream.get(stream_id)
                        if pair is not None and stream_id == pair.data and data:
                            await self._to_pod(pair, data)
                            await self.conn.consumed(stream_id, len(data))
                    case spdy.RstStream(stream_id):
                        pair = self.by_stream.get(stream_id)
                        if pair is not None and pair.upstream is not None:
                            await pair.upstream.close()
                    case spdy.GoAway():
                        break
        finally:
            tasks = [p.task for p in self.pairs.values() if p.task is not None]
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, ConnectionError, RuntimeError):
                    await task

    async def _open(self, stream_id: int, headers: spdy.Headers) -> None:
        kind, request_id = headers.get("streamtype"), headers.get("requestid", headers.get("port", ""))
        try:
            port = int(headers.get("port", ""))
        except ValueError:
            port = 0
        if kind not in ("data", "error") or not 0 < port < 65536:
            await self.conn.send(spdy.RstStream(stream_id, spdy.PROTOCOL_ERROR))
            return
        pair = self.pairs.setdefault(request_id, _Pair(port))
        setattr(pair, kind, stream_id)
        self.by_stream[stream_id] = pair
        await self.conn.send(spdy.SynReply(stream_id))
        if pair.data and pair.error and pair.task is None:
            pair.task = asyncio.create_task(self._forward(request_id, pair))

    async def _to_pod(self, pair: _Pair, data: bytes) -> None:
        if pair.upstream is None:
            pair.backlog.append(data)
        else:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await pair.upstream.send_bytes(b"\x00" + data)

    async def _forward(self, request_id: str, pair: _Pair) -> None:
        try:
            try:
                pair.upstream = await self.connect({"ports": str(pair.port)})
            except APIError as exc:  # the kubelet refused or cannot be reached: said on the error stream
                await self.conn.send_data(pair.error, f"error forwarding port {pair.port}: {exc}".encode())
                return
            async with pair.upstream:
                for data in pair.backlog:
                    await pair.upstream.send_bytes(b"\x00" + data)
                pair.backlog.clear()
                prefixed: set[int] = set()
                async for message in pair.upstream:
                    if message.type is not WSMsgType.BINARY or not message.data:
                        continue
                    channel, data = message.data[0], bytes(message.data[1:])
                    if channel not in prefixed:  # the first message of each channel is the port number
                        prefixed.add(channel)
                        continue
                    if data:
                        await self.conn.send_data(pair.data if channel == 0 else pair.error, data)
        finally:
            self.pairs.pop(request_id, None)
            await self.conn.send_data(pair.data, b"", fin=True)
            await self.conn.send_data(pair.error, b"", fin=True)
