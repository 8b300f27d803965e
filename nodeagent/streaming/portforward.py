"""The kubelet's `/portForward/{namespace}/{pod}` over WebSocket (the protocol the official Python client's
`portforward()` speaks).

Upstream: pkg/kubelet/cri/streaming/portforward/websocket.go — the ports come from the query (`ports`,
comma-separated or repeated), each port i gets channel 2i for data (both ways) and 2i+1 for errors (to the
client); the first message on each of both channels is the port number as two little-endian bytes; the
connection ends when every port's forwarding has ended. Subprotocol `v4.channel.k8s.io` (binary), or none.
Each port is dialled at 127.0.0.1 inside the pod's network namespace, as upstream's runtimes do.

How the connection gets into the pod: a socket is created by a short-lived thread that has entered the
pod sandbox's network namespace (nodeagent/network/nsenter.py, setns on `/proc/<pause pid>/ns/net`); a
socket belongs to the namespace it was created in for life, so once connected it is driven from the event
loop like any other. Nothing is run inside the container, so images without `nc` or `socat` work.

kubectl's own port-forward speaks SPDY; the API server ends it and opens one of these WebSockets per
forwarded connection (control/apiserver/streaming/spdystreaming.py), so the kubelet speaks WebSocket only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from collections.abc import Callable, Iterable

from aiohttp import WSCloseCode, WSMsgType, web

from nodeagent.network.nsenter import call_in_netns
from nodeagent.runtime.interface import Runtime
from nodeagent.runtime.types import SandboxState
from nodeagent.streaming import channels as ch

log = logging.getLogger(__name__)
PROTOCOLS = (ch.V4,)
CONNECT_TIMEOUT = 5.0
READ_SIZE = 64 * 1024
CLOSE_TIMEOUT = 1.0  # how long a close waits for the client's answering close frame
Opener = Callable[[str, str, int], socket.socket]  # (namespace, pod, port) → connected, blocking socket


def parse_ports(values: Iterable[str]) -> list[int]:
    """The ports asked for, in order; ValueError with upstream's messages."""
    ports: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                port = int(part)
            except ValueError:
                raise ValueError(f'unable to parse "{part}" as a port: not an integer') from None
            if not 0 < port < 65536:
                raise ValueError(f"port {port} must be > 0 and < 65536")
            ports.append(port)
    if not ports:
        raise ValueError("query parameter \"port\" is required")
    return ports


def port_prefix(port: int) -> bytes:
    return struct.pack("<H", port)


def connect_in_pod(runtime: Runtime, namespace: str, pod: str, port: int) -> socket.socket:
    """A TCP connection to 127.0.0.1:`port` in the network namespace of the pod's running sandbox."""
    sandbox = next((s for status in runtime.list_pods() if status.namespace == namespace and status.name == pod
                    for s in status.sandboxes if s.state is SandboxState.READY), None)
    if sandbox is None:
        raise LookupError(f'pod "{pod}" in namespace "{namespace}" has no running sandbox')
    pid = runtime.sandbox_pid(sandbox.id)
    return call_in_netns(f"/proc/{pid}/ns/net",
                         lambda: socket.create_connection(("127.0.0.1", port), timeout=CONNECT_TIMEOUT),
                         timeout=CONNECT_TIMEOUT + 1)


async def serve(request: web.Request, *, open_port: Opener) -> web.StreamResponse:
    namespace, pod = request.match_info["namespace"], request.match_info["pod"]
    try:
        ports = parse_ports([*request.query.getall("ports", []), *request.query.getall("port", [])])
    except ValueError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
    ws = web.WebSocketResponse(protocols=PROTOCOLS, max_msg_size=ch.MAX_MESSAGE_BYTES, timeout=CLOSE_TIMEOUT)
    if not ws.can_prepare(request).ok:
        raise web.HTTPBadRequest(text="Upgrade request required (WebSocket with v4.channel.k8s.io)")
    await ws.prepare(request)
    for index, port in enumerate(ports):
        await ws.send_bytes(ch.encode(2 * index, port_prefix(port)))
        await ws.send_bytes(ch.encode(2 * index + 1, port_prefix(port)))
    sockets: dict[int, socket.socket] = {}
    tasks: list[asyncio.Task[None]] = []  # the forwards, then the client's reader
    code, reason = WSCloseCode.OK, b""
    try:
        for index, port in enumerate(ports):
            try:
                sock = await asyncio.to_thread(open_port, namespace, pod, port)
            except (OSError, LookupError, TimeoutError) as exc:
                message = (f"error forwarding port {port} to pod {pod}: {exc}").encode()
                await ws.send_bytes(ch.encode(2 * index + 1, message))
                continue
            sock.setblocking(False)
            sockets[2 * index] = sock
            tasks.append(asyncio.create_task(_from_pod(ws, sock, 2 * index)))
        forwards = list(tasks)
        tasks.append(asyncio.create_task(_from_client(ws, sockets)))
        if forwards:
            await asyncio.wait(forwards)  # every port's connection ended (or the client went: see below)
    except asyncio.CancelledError:  # the kubelet is stopping (control/util/openstreams.py)
        code, reason = WSCloseCode.GOING_AWAY, b"the kubelet is stopping"
        raise
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for sock in sockets.values():
            sock.close()
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.close(code=code, message=reason)
    return ws


async def _from_pod(ws: web.WebSocketResponse, sock: socket.socket, channel: int) -> None:
    loop = asyncio.get_running_loop()
    while True:
        try:
            data = await loop.sock_recv(sock, READ_SIZE)
        except OSError:
            return
        if not data or ws.closed:
            return
        await ws.send_bytes(ch.encode(channel, data))


async def _from_client(ws: web.WebSocketResponse, sockets: dict[int, socket.socket]) -> None:
    """Client data to its port's connection; when the client closes, every connection is shut down, which
    ends the `_from_pod` readers."""
    loop = asyncio.get_running_loop()
    async for message in ws:
        if message.type is not WSMsgType.BINARY or not message.data:
            continue
        sock = sockets.get(message.data[0])
        if sock is not None and len(message.data) > 1:
            try:
                await loop.sock_sendall(sock, message.data[1:])
            except OSError as exc:
                log.debug("port-forward write: %s", exc)
    for sock in sockets.values():
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
