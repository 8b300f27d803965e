"""`pods/exec` and `pods/attach`: the API server relays a client's WebSocket to the pod's kubelet.

Upstream: pkg/registry/core/pod/rest/subresources.go (ExecREST, AttachREST: the kubelet URL
`/exec|attach/{namespace}/{pod}/{container}` with the options as query) and the upgrade-aware proxy
(k8s.io/apimachinery/pkg/util/proxy/upgradeaware.go) that splices the client's upgraded connection to the
kubelet's. Here the splice is at the message level with aiohttp on both sides: the kubelet connection is
opened first (through control/apiserver/kubeletclient.py, with the kubelet-client certificate), offering
the subprotocols the client offered; the client's upgrade is then accepted with the one the kubelet chose
(`v5.channel.k8s.io` or `v4.channel.k8s.io`, nodeagent/streaming/channels.py), and binary messages are
copied both ways unchanged until either side closes. A kubelet that refuses (404 container not running,
400 bad options, 401) becomes the same HTTP error to the client before any upgrade.

Departures: no SPDY (kubectl ≤ 1.29 gets 400 "Upgrade request required"; newer kubectl speaks WebSocket
first); no port-forward yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import aiohttp
from aiohttp import WSMsgType, web

from control.apiserver import status
from control.apiserver.kubeletclient import KubeletClient, NodeConnection
from control.apiserver.status import APIError

log = logging.getLogger(__name__)


def offered_protocols(request: web.Request) -> list[str]:
    return [p.strip() for header in request.headers.getall("Sec-WebSocket-Protocol", [])
            for p in header.split(",") if p.strip()]


async def relay(request: web.Request, kubelet: KubeletClient, connection: NodeConnection, path: str,
                node_name: str) -> web.StreamResponse:
    """Upgrade `request` and splice it to the kubelet's WebSocket at `path` (query passed on unchanged)."""
    if not web.WebSocketResponse().can_prepare(request).ok:
        raise status.bad_request("Upgrade request required: this server streams over WebSocket "
                                 "(v5.channel.k8s.io, v4.channel.k8s.io) only, not SPDY")
    url = connection.url(path)
    async with kubelet.session() as session:
        try:
            upstream = await session.ws_connect(url, params=request.query, protocols=offered_protocols(request),
                                                max_msg_size=0, autoping=True)
        except aiohttp.WSServerHandshakeError as exc:
            raise APIError(exc.status if 400 <= exc.status < 500 else 502,
                           {400: "BadRequest", 401: "Unauthorized", 404: "NotFound"}.get(exc.status, "BadGateway"),
                           f"the kubelet of node {node_name} refused the stream: {exc.status} {exc.message}") from None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise status.service_unavailable(f"cannot reach the kubelet of node {node_name} at "
                                             f"{connection.host}:{connection.port}: {exc}") from None
        async with upstream:
            client = web.WebSocketResponse(protocols=(upstream.protocol,) if upstream.protocol else (),
                                           max_msg_size=0)
            await client.prepare(request)
            await _splice(client, upstream)
    return client


async def _splice(client: web.WebSocketResponse, upstream: aiohttp.ClientWebSocketResponse) -> None:
    async def copy(source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
                   sink: web.WebSocketResponse | aiohttp.ClientWebSocketResponse) -> None:
        async for message in source:
            if message.type is WSMsgType.BINARY:
                await sink.send_bytes(message.data)
            elif message.type is WSMsgType.TEXT:
                await sink.send_str(message.data)

    tasks = {asyncio.create_task(copy(client, upstream)), asyncio.create_task(copy(upstream, client))}
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, RuntimeError):
                await task
        with contextlib.suppress(ConnectionError, RuntimeError):
            await upstream.close()
        with contextlib.suppress(ConnectionError, RuntimeError):
            await client.close()
