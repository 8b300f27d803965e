"""The API server's SPDY/3.1 streams translated to a kubelet's WebSocket (control/apiserver/streaming/spdystreaming.py),
driven by a SPDY client built from the framing module against a fake kubelet speaking the WebSocket
protocols of nodeagent/streaming (exec: v5 channels; port-forward: port-prefixed channels)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestServer

from control.apiserver.status import APIError
from control.apiserver.streaming import spdy
from control.apiserver.streaming import websocket as streaming
from control.apiserver.streaming.kubeletclient import KubeletClient, NodeConnection


class PlainKubelet(KubeletClient):
    def __init__(self) -> None:
        pass

    def session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession()


class HttpNode(NodeConnection):
    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"


async def fake_exec(request: web.Request) -> web.WebSocketResponse:
    """Writes to stdout and stderr, echoes stdin to stdout until stdin is closed, then a Status."""
    ws = web.WebSocketResponse(protocols=("v5.channel.k8s.io", "v4.channel.k8s.io"))
    await ws.prepare(request)
    await ws.send_bytes(b"\x01out:")
    await ws.send_bytes(b"\x02err")
    async for message in ws:
        if message.type is WSMsgType.BINARY and message.data[:1] == b"\x00":
            await ws.send_bytes(b"\x01" + message.data[1:])
        elif message.type is WSMsgType.BINARY and message.data == b"\xff\x00":
            break
        elif message.type is WSMsgType.BINARY and message.data[:1] == b"\x04":
            await ws.send_bytes(b"\x02resized " + message.data[1:])
    await ws.send_bytes(b"\x03" + json.dumps({"status": "Success"}).encode())
    await ws.close()
    return ws


async def fake_portforward(request: web.Request) -> web.WebSocketResponse:
    """One port (from the query): the port prefix on both channels, then upper-cases one data message."""
    ws = web.WebSocketResponse(protocols=("v4.channel.k8s.io",))
    await ws.prepare(request)
    port = int(request.query["ports"]).to_bytes(2, "little")
    await ws.send_bytes(b"\x00" + port)
    await ws.send_bytes(b"\x01" + port)
    async for message in ws:
        await ws.send_bytes(b"\x00" + message.data[1:].upper())
        break
    await ws.close()
    return ws


class Client:
    """A raw SPDY client: the HTTP upgrade, then frames."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.compressor, self.frames = spdy.HeaderCompressor(), spdy.FrameReader()

    def send(self, *frames: spdy.Frame) -> None:
        for frame in frames:
            self.writer.write(spdy.encode(frame, self.compressor))

    async def receive_until(self, done: Callable[[list[spdy.Frame]], bool]) -> list[spdy.Frame]:
        received: list[spdy.Frame] = []
        while not done(received):
            chunk = await asyncio.wait_for(self.reader.read(65536), 5)
            if not chunk:
                break
            received += self.frames.feed(chunk)
        return received


async def with_spdy(subresource: str, path: str, query: str, versions: str,
                    talk: Callable[[Client, bytes], Awaitable[None]]) -> None:
    kubelet = web.Application()
    kubelet.router.add_get("/exec", fake_exec)
    kubelet.router.add_get("/pf", fake_portforward)

    async def handler(request: web.Request) -> web.StreamResponse:
        try:
            return await streaming.relay(request, PlainKubelet(), HttpNode("127.0.0.1", kubelet_server.port or 0),
                                         path, "n1", subresource)
        except APIError as exc:
            return web.json_response({"message": exc.message}, status=exc.code)

    api = web.Application()
    api.router.add_route("*", "/", handler)
    async with TestServer(kubelet) as kubelet_server, TestServer(api) as api_server:
        reader, writer = await asyncio.open_connection("127.0.0.1", api_server.port)
        writer.write(f"POST /?{query} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                     f"X-Stream-Protocol-Version: {versions}\r\nContent-Length: 0\r\n\r\n".encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        try:
            await talk(Client(reader, writer), head)
        finally:
            writer.close()


def by_stream(frames: list[spdy.Frame]) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    for frame in frames:
        if isinstance(frame, spdy.Data) and frame.data:
            out[frame.stream_id] = out.get(frame.stream_id, b"") + frame.data
    return out


def fins(frames: list[spdy.Frame]) -> set[int]:
    return {f.stream_id for f in frames if isinstance(f, spdy.Data) and f.fin}


def test_exec_streams_map_to_channels_and_end_with_the_status() -> None:
    async def talk(client: Client, head: bytes) -> None:
        assert head.startswith(b"HTTP/1.1 101")
        assert b"X-Stream-Protocol-Version: v4.channel.k8s.io" in head
        client.send(spdy.SynStream(1, {"streamType": "error"}), spdy.SynStream(3, {"streamType": "stdin"}),
                    spdy.SynStream(5, {"streamType": "stdout"}), spdy.SynStream(7, {"streamType": "stderr"}),
                    spdy.SynStream(9, {"streamType": "resize"}))
        replies = await client.receive_until(lambda fs: sum(isinstance(f, spdy.SynReply) for f in fs) == 5)
        client.send(spdy.Data(9, b'{"Width":80,"Height":24}\n{"Wid'), spdy.Data(3, b"hi"), spdy.Ping(1))
        client.send(spdy.Data(9, b'th":81,"Height":25}\n'), spdy.Data(3, b"", fin=True))
        frames = replies + await client.receive_until(lambda fs: any(isinstance(f, spdy.GoAway) for f in fs))
        data = by_stream(frames)
        assert data[5] == b"out:hi"
        assert data[7] == b'errresized {"Width":80,"Height":24}resized {"Width":81,"Height":25}'
        assert json.loads(data[1]) == {"status": "Success"}
        assert {1, 3, 5, 7, 9} <= fins(frames)
        assert spdy.Ping(1) in frames
        assert spdy.WindowUpdate(3, 2) in frames and spdy.WindowUpdate(0, 2) in frames
    asyncio.run(with_spdy("exec", "/exec", "stdin=true&stdout=true&stderr=true",
                          "v4.channel.k8s.io,v3.channel.k8s.io,v2.channel.k8s.io,channel.k8s.io", talk))


def test_port_forward_pair_becomes_one_kubelet_websocket() -> None:
    async def talk(client: Client, head: bytes) -> None:
        assert head.startswith(b"HTTP/1.1 101") and b"portforward.k8s.io" in head
        client.send(spdy.SynStream(1, {"streamtype": "error", "port": "8080", "requestid": "0"}),
                    spdy.SynStream(3, {"streamtype": "data", "port": "8080", "requestid": "0"}),
                    spdy.Data(3, b"get /"))
        frames = await client.receive_until(lambda fs: fins(fs) >= {1, 3})
        assert by_stream(frames) == {3: b"GET /"}  # the port prefixes were not passed on
        assert [f.stream_id for f in frames if isinstance(f, spdy.SynReply)] == [1, 3]
    asyncio.run(with_spdy("portforward", "/pf", "", "portforward.k8s.io", talk))


def test_no_common_stream_protocol_is_a_400_before_any_upgrade() -> None:
    async def talk(client: Client, head: bytes) -> None:
        assert head.startswith(b"HTTP/1.1 400")
    asyncio.run(with_spdy("exec", "/exec", "", "v3.channel.k8s.io", talk))


def test_port_forward_through_the_spdy_tunnel_in_a_websocket() -> None:
    """kubectl ≥ 1.31: the same SPDY frames, carried in binary WebSocket messages of subprotocol
    `SPDY/3.1+portforward.k8s.io`, with no HTTP upgrade inside."""
    kubelet = web.Application()
    kubelet.router.add_get("/pf", fake_portforward)

    node: list[HttpNode] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        return await streaming.relay(request, PlainKubelet(), node[0], "/pf", "n1", "portforward")

    api = web.Application()
    api.router.add_get("/", handler)

    async def main() -> list[spdy.Frame]:
        async with TestServer(kubelet) as kubelet_server, TestServer(api) as api_server:
            node.append(HttpNode("127.0.0.1", kubelet_server.port or 0))
            return await talk(api_server.port or 0)

    async def talk(port: int) -> list[spdy.Frame]:
        async with aiohttp.ClientSession() as session, \
                session.ws_connect(f"http://127.0.0.1:{port}/",
                                   protocols=("SPDY/3.1+portforward.k8s.io",)) as ws:
            assert ws.protocol == "SPDY/3.1+portforward.k8s.io"
            compressor, reader = spdy.HeaderCompressor(), spdy.FrameReader()
            for frame in (spdy.SynStream(1, {"streamtype": "error", "port": "80", "requestid": "7"}),
                          spdy.SynStream(3, {"streamtype": "data", "port": "80", "requestid": "7"}),
                          spdy.Data(3, b"ping")):
                await ws.send_bytes(spdy.encode(frame, compressor))
            frames: list[spdy.Frame] = []
            while not fins(frames) >= {1, 3}:
                message = await asyncio.wait_for(ws.receive(), 5)
                assert message.type is WSMsgType.BINARY, message
                frames += reader.feed(message.data)
            return frames

    frames = asyncio.run(main())
    assert by_stream(frames) == {3: b"PING"}
    assert [f.stream_id for f in frames if isinstance(f, spdy.SynReply)] == [1, 3]
