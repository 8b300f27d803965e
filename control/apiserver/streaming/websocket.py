"""`pods/exec`, `pods/attach`, `pods/portforward`: the API server relays a client's WebSocket to the pod's
kubelet.

Upstream: pkg/registry/core/pod/rest/subresources.go (ExecREST, AttachREST: the kubelet URL
`/exec|attach/{namespace}/{pod}/{container}` with the options as query) and the upgrade-aware proxy
(k8s.io/apimachinery/pkg/util/proxy/upgradeaware.go) that splices the client's upgraded connection to the
kubelet's. Here the splice is at the message level with aiohttp on both sides: the kubelet connection is
opened first (through control/apiserver/streaming/kubeletclient.py, with the kubelet-client certificate), offering
the subprotocols the client offered, in its order; the client's upgrade is then accepted with the one the
kubelet chose (`v5.channel.k8s.io`, `v4.channel.k8s.io`, `v4.base64.channel.k8s.io`,
`base64.channel.k8s.io`, `channel.k8s.io` or none: nodeagent/streaming/channels.py), and text and binary
messages are copied both ways unchanged until either side closes. Departure: upstream's API server ends
v5 itself (apiserver pkg/util/proxy/streamtranslator.go) because its kubelets do not speak it; these do.
A kubelet that refuses (404 container not running,
400 bad options, 401) becomes the same HTTP error to the client before any upgrade.

Port-forward is relayed the same way to the kubelet's `/portForward/{namespace}/{pod}` (upstream
PortForwardREST), with the WebSocket protocol of nodeagent/streaming/portforward.py.

SPDY/3.1 upgrades (kubectl ≤ 1.29's exec, attach and cp, and every kubectl's port-forward) and kubectl ≥
1.31's SPDY-in-WebSocket port-forward tunnel (`SPDY/3.1+portforward.k8s.io`) are ended here and translated
to the same kubelet WebSockets by control/apiserver/streaming/spdystreaming.py.

Every WebSocket message, either way, is at most kubeletclient.MAX_MESSAGE_BYTES; a larger one closes the
connection with 1009 Message Too Big instead of being buffered whole.

When the server stops, open relays are cancelled (control/util/openstreams.py) and the client's WebSocket
closed with 1001 Going Away; a kubelet that stops closes with 1001 too, which is passed on. No close waits
more than CLOSE_TIMEOUT for the other side's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping

import aiohttp
from aiohttp import WSCloseCode, WSMsgType, web

from control.apiserver import status
from control.apiserver.status import APIError
from control.apiserver.streaming import spdystreaming
from control.apiserver.streaming.kubeletclient import MAX_MESSAGE_BYTES, KubeletClient, NodeConnection

log = logging.getLogger(__name__)
# What the kubelets speak (nodeagent/streaming/channels.py, portforward.py); a client offering none of these
# (nor, for port-forward, the SPDY tunnel) is refused before the upgrade; one offering no subprotocol at all
# gets the unnamed binary framing of `channel.k8s.io`, as upstream's kubelet.
CHANNEL_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v4.base64.channel.k8s.io", "base64.channel.k8s.io",
                     "channel.k8s.io")
SUBPROTOCOLS = {"exec": CHANNEL_PROTOCOLS, "attach": CHANNEL_PROTOCOLS, "portforward": ("v4.channel.k8s.io",)}
CLOSE_TIMEOUT = 1.0  # how long a close waits for the other side's answering close frame


def offered_protocols(request: web.Request) -> list[str]:
    return [p.strip() for header in request.headers.getall("Sec-WebSocket-Protocol", [])
            for p in header.split(",") if p.strip()]


def is_websocket_upgrade(request: web.Request, offered: list[str]) -> bool:
    """A valid WebSocket handshake (checked against the client's own offers, so aiohttp logs no mismatch)."""
    return web.WebSocketResponse(protocols=offered).can_prepare(request).ok


async def relay(request: web.Request, kubelet: KubeletClient, connection: NodeConnection, path: str,
                node_name: str, subresource: str) -> web.StreamResponse:
    """Upgrade `request` and splice it to the kubelet's WebSocket at `path` (query passed on unchanged): the
    kubelet is offered the client's protocols it speaks, in the client's order, and the client gets the one
    the kubelet chose."""
    if spdystreaming.is_spdy_upgrade(request):
        return await spdystreaming.serve(request, kubelet, connection, path, subresource,
                                         lambda session, url, params, protocols: connect(
                                             session, url, params, protocols, connection, node_name))
    supported = SUBPROTOCOLS[subresource]
    offered = offered_protocols(request)
    upgrade = is_websocket_upgrade(request, offered)
    if upgrade and subresource == "portforward" and spdystreaming.TUNNEL_PROTOCOL in offered:
        return await spdystreaming.serve_tunnel(request, kubelet, connection, path,
                                                lambda session, url, params, protocols: connect(
                                                    session, url, params, protocols, connection, node_name))
    wanted = [p for p in offered if p in supported]
    if not upgrade or (offered and not wanted):
        raise status.bad_request(f"Upgrade request required: pods/{subresource} is served over WebSocket with "
                                 f"{' or '.join(supported)} or SPDY/3.1")
    url = connection.url(path)
    async with kubelet.session() as session:
        upstream = await connect(session, url, request.query, wanted, connection, node_name)
        async with upstream:
            client = web.WebSocketResponse(protocols=(upstream.protocol,) if upstream.protocol else (),
                                           max_msg_size=MAX_MESSAGE_BYTES, timeout=CLOSE_TIMEOUT)
            await client.prepare(request)
            await _splice(client, upstream)
    return client


async def connect(session: aiohttp.ClientSession, url: str, params: Mapping[str, str], protocols: list[str],
                  connection: NodeConnection, node_name: str) -> aiohttp.ClientWebSocketResponse:
    """A WebSocket to the kubelet; its refusals become the same HTTP errors for the client."""
    try:
        return await session.ws_connect(url, params=params, max_msg_size=MAX_MESSAGE_BYTES, autoping=True,
                                        protocols=protocols, timeout=aiohttp.ClientWSTimeout(ws_close=CLOSE_TIMEOUT))
    except aiohttp.WSServerHandshakeError as exc:
        raise APIError(exc.status if 400 <= exc.status < 500 else 502,
                       {400: "BadRequest", 401: "Unauthorized", 404: "NotFound"}.get(exc.status, "BadGateway"),
                       f"the kubelet of node {node_name} refused the stream: {exc.status} {exc.message}") from None
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise status.service_unavailable(f"cannot reach the kubelet of node {node_name} at "
                                         f"{connection.host}:{connection.port}: {exc}") from None


async def _splice(client: web.WebSocketResponse, upstream: aiohttp.ClientWebSocketResponse) -> None:
    async def copy(source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
                   sink: web.WebSocketResponse | aiohttp.ClientWebSocketResponse) -> None:
        async for message in source:
            if message.type is WSMsgType.BINARY:
                await sink.send_bytes(message.data)
            elif message.type is WSMsgType.TEXT:
                await sink.send_str(message.data)

    tasks = {asyncio.create_task(copy(client, upstream)), asyncio.create_task(copy(upstream, client))}
    code, reason = WSCloseCode.OK, b""
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        if upstream.closed and upstream.close_code == WSCloseCode.GOING_AWAY:  # the kubelet is stopping
            code, reason = WSCloseCode.GOING_AWAY, b"the kubelet is stopping"
    except asyncio.CancelledError:  # the API server is stopping (control/util/openstreams.py)
        code, reason = WSCloseCode.GOING_AWAY, b"the API server is stopping"
        raise
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(ConnectionError, RuntimeError):
            await upstream.close()
        with contextlib.suppress(ConnectionError, RuntimeError):
            await client.close(code=code, message=reason)
