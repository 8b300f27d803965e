"""What the API server's streaming relay refuses before it dials a kubelet (control/apiserver/streaming/websocket.py):
a request that is no upgrade, a SPDY upgrade without a stream protocol in common, and a WebSocket offering
only protocols neither the kubelets nor the SPDY tunnel speak — each a 400 Status, so a client falls back
or stops at once instead of hanging. Then a relay to a kubelet stand-in: the kubelet's choice among the
client's protocols, text and binary messages both ways, a stopping kubelet's 1001 passed on, and the API
server's stop ending open relays at once with 1001 and closing their kubelet side."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from control.apiserver.status import APIError
from control.apiserver.streaming import websocket as streaming
from control.apiserver.streaming.kubeletclient import KubeletClient, NodeConnection
from control.util.openstreams import OpenStreams


class NoKubelet(KubeletClient):
    def __init__(self) -> None:
        self.dialled = False

    def session(self) -> aiohttp.ClientSession:
        self.dialled = True
        raise AssertionError("the relay dialled a kubelet for a request it should refuse")


def refusal(subresource: str, headers: dict[str, str], *, websocket_protocols: tuple[str, ...] = ()) -> tuple[int, str]:
    kubelet = NoKubelet()

    async def handler(request: web.Request) -> web.StreamResponse:
        try:
            return await streaming.relay(request, kubelet, NodeConnection("127.0.0.1", 1), "/x", "n1", subresource)
        except APIError as exc:
            return web.json_response({"message": exc.message}, status=exc.code)

    app = web.Application()
    app.router.add_route("*", "/", handler)
    answer: dict[str, tuple[int, str]] = {}

    async def main() -> None:
        async with TestClient(TestServer(app)) as client:
            if websocket_protocols:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await client.ws_connect("/", protocols=websocket_protocols)
                answer["x"] = (refused.value.status, "")
            else:
                response = await client.post("/", headers=headers)
                answer["x"] = (response.status, (await response.json())["message"])
    asyncio.run(main())
    assert not kubelet.dialled
    return answer["x"]


def test_plain_request_and_spdy_without_a_common_protocol_are_refused_with_a_message() -> None:
    code, message = refusal("exec", {})
    assert code == 400 and message.startswith("Upgrade request required")
    code, message = refusal("exec", {"Connection": "Upgrade", "Upgrade": "SPDY/3.1",
                                     "X-Stream-Protocol-Version": "v3.channel.k8s.io"})
    assert code == 400 and message.startswith("unable to upgrade: no common stream protocol")


def test_other_websocket_protocols_are_refused() -> None:
    assert refusal("exec", {}, websocket_protocols=("SPDY/3.1+portforward.k8s.io",))[0] == 400
    assert refusal("portforward", {}, websocket_protocols=("SPDY/3.1+v4.channel.k8s.io",))[0] == 400
    assert refusal("exec", {}, websocket_protocols=("v3.channel.k8s.io",))[0] == 400  # a SPDY-only version
    assert refusal("attach", {}, websocket_protocols=("v4.base64.channel.k8s.io.x",))[0] == 400


# -- relaying to a kubelet, and stopping ------------------------------------------------------------------

class LocalKubelet(KubeletClient):
    """Plain-HTTP sessions to a kubelet stand-in on this host."""

    def __init__(self) -> None:
        pass

    def session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession()


class PlainConnection(NodeConnection):
    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"


def kubelet_stand_in(kubelet_closes: asyncio.Event, kubelet_left: asyncio.Event) -> web.Application:
    """`/exec/ns/pod/c` echoes text and binary messages (and says when its client left);
    `/exec/ns/pod/stopping` closes with 1001 once `kubelet_closes` is set, as a stopping kubelet does."""
    async def echo(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(protocols=("v4.base64.channel.k8s.io",))
        await ws.prepare(request)
        async for message in ws:
            await (ws.send_str(message.data) if message.type is aiohttp.WSMsgType.TEXT
                   else ws.send_bytes(message.data))
        kubelet_left.set()
        return ws

    async def stopping(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(protocols=("v4.base64.channel.k8s.io",))
        await ws.prepare(request)
        await kubelet_closes.wait()
        await ws.close(code=aiohttp.WSCloseCode.GOING_AWAY)
        return ws

    app = web.Application()
    app.router.add_get("/exec/ns/pod/c", echo)
    app.router.add_get("/exec/ns/pod/stopping", stopping)
    return app


def test_relay_passes_messages_and_ends_at_shutdown_and_when_the_kubelet_stops() -> None:
    async def main() -> None:
        kubelet_closes, kubelet_left = asyncio.Event(), asyncio.Event()
        kubelet_server = TestServer(kubelet_stand_in(kubelet_closes, kubelet_left))
        await kubelet_server.start_server()
        connection = PlainConnection("127.0.0.1", kubelet_server.port or 0)

        async def relay(request: web.Request) -> web.StreamResponse:
            return await streaming.relay(request, LocalKubelet(), connection,
                                         f"/exec/ns/pod/{request.match_info['container']}", "n1", "exec")

        relay_app = web.Application()
        OpenStreams(lambda request: True).install(relay_app)
        relay_app.router.add_get("/{container}", relay)
        server = TestServer(relay_app)  # its runner would wait 60 s for open requests
        async with TestClient(server) as client:
            ws = await client.ws_connect("/c", protocols=("x.example", "v4.base64.channel.k8s.io"))
            assert ws.protocol == "v4.base64.channel.k8s.io"  # the kubelet's choice among the client's
            await ws.send_str("0aGk=")
            assert (await ws.receive()).data == "0aGk="
            await ws.send_bytes(b"\x00hi")
            assert (await ws.receive()).data == b"\x00hi"
            stopping = await client.ws_connect("/stopping", protocols=("v4.base64.channel.k8s.io",))
            kubelet_closes.set()  # the kubelet stops: its 1001 reaches the client
            assert (await stopping.receive()).type is aiohttp.WSMsgType.CLOSE
            assert stopping.close_code == aiohttp.WSCloseCode.GOING_AWAY
            reader = asyncio.create_task(ws.receive())
            started = time.monotonic()
            await server.close()  # the API server stops
            assert time.monotonic() - started < 2
            assert (await reader).type is aiohttp.WSMsgType.CLOSE
            assert ws.close_code == aiohttp.WSCloseCode.GOING_AWAY
            await asyncio.wait_for(kubelet_left.wait(), 2)  # and the kubelet's side was closed
        await kubelet_server.close()

    asyncio.run(main())
