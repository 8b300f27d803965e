"""What the API server's streaming relay refuses before it dials a kubelet (control/apiserver/streaming/websocket.py):
a request that is no upgrade, a SPDY upgrade without a stream protocol in common, and a WebSocket offering
only protocols neither the kubelets nor the SPDY tunnel speak — each a 400 Status, so a client falls back
or stops at once instead of hanging."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from control.apiserver.status import APIError
from control.apiserver.streaming import websocket as streaming
from control.apiserver.streaming.kubeletclient import KubeletClient, NodeConnection


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
