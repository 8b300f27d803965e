"""The kubelet's `/exec/{namespace}/{pod}/{container}` and `/attach/...` endpoints over WebSocket.

Upstream: pkg/kubelet/server/server.go (getExec, getAttach: GET and POST on those paths),
pkg/kubelet/cri/streaming/remotecommand (options from the query: repeated `command`, `stdin`, `stdout`,
`stderr`, `tty` as "1" or "true"; at least one stream; with a TTY there is no separate stderr; the error
channel gets a Status when the command ends, then the connection closes) and
k8s.io/apimachinery/pkg/util/httpstream/wsstream (channel byte before each message). The API server
relays a client's WebSocket here unchanged (control/apiserver/streaming/websocket.py), so what kubectl and the
Python client speak is what this module speaks: channels.py.

The process's stdio is a socket hijacked from Docker (runtime `exec_stream`/`attach_stream`); the socket is
made non-blocking and driven by the event loop (`sock_recv`/`sock_sendall`), so a session costs no thread.
Two tasks: output (runtime → client, demultiplexing Docker's frames unless TTY) and input (client →
runtime: stdin data, v5's stdin close as a write shutdown, resize). When the output ends the exit code is
read and sent as the Status; when the client goes first the runtime connection is closed (a TTY process
gets SIGHUP, as upstream; a non-TTY one sees EOF on stdin).

Departures: WebSocket only (kubectl's SPDY is translated by the API server, control/apiserver/
streaming/spdystreaming.py); no streaming idle timeout (upstream: 4 h).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiohttp import WSMsgType, web

from nodeagent.runtime.interface import ContainerStream, RuntimeFailure, StreamingRuntime
from nodeagent.streaming import channels as ch

log = logging.getLogger(__name__)
READ_SIZE = 64 * 1024


@dataclass(frozen=True)
class Options:
    command: tuple[str, ...]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true")


def parse_options(query: Mapping[str, str], command: list[str], *, exec_: bool) -> Options:
    """Options from the query (`command`: its repeated `command` values), or ValueError with upstream's
    message."""
    stdin, stdout, stderr, tty = (_truthy(query.get(k)) for k in ("stdin", "stdout", "stderr", "tty"))
    if not (stdin or stdout or stderr):
        raise ValueError("you must specify at least 1 of stdin, stdout, stderr")
    if exec_ and not command:
        raise ValueError("you must specify at least one command for the container")
    return Options(command=tuple(command) if exec_ else (), stdin=stdin, stdout=stdout,
                   stderr=stderr and not tty, tty=tty)


async def serve(request: web.Request, *, runtime: StreamingRuntime,
                find_container: Callable[[str, str, str], str | None], exec_: bool) -> web.StreamResponse:
    namespace, pod, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
    try:
        options = parse_options(request.query, request.query.getall("command", []), exec_=exec_)
    except ValueError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
    container_id = await asyncio.to_thread(find_container, namespace, pod, container)
    if container_id is None:
        raise web.HTTPNotFound(text=f'container "{container}" in pod "{pod}" is not running')
    ws = web.WebSocketResponse(protocols=ch.PROTOCOLS, max_msg_size=0)
    if not ws.can_prepare(request).ok:
        raise web.HTTPBadRequest(text="Upgrade request required (WebSocket with v5.channel.k8s.io or "
                                      "v4.channel.k8s.io)")
    await ws.prepare(request)
    protocol = ws.ws_protocol or ""
    if protocol not in ch.PROTOCOLS:
        await ws.close(message=b"no supported channel protocol was offered")
        return ws
    try:
        stream = await asyncio.to_thread(
            runtime.exec_stream, container_id, list(options.command), stdin=options.stdin, tty=options.tty
        ) if exec_ else await asyncio.to_thread(runtime.attach_stream, container_id, stdin=options.stdin)
    except RuntimeFailure as exc:
        await ws.send_bytes(ch.encode(ch.ERROR, ch.status_bytes(ch.error_status(str(exc)))))
        await ws.close()
        return ws
    try:
        await Session(ws, stream, options, protocol).run(exec_=exec_)
    finally:
        stream.close()
    return ws


class Session:
    """One client connection bridged to one hijacked runtime connection."""

    def __init__(self, ws: web.WebSocketResponse, stream: ContainerStream, options: Options, protocol: str) -> None:
        self.ws = ws
        self.stream = stream
        self.options = options
        self.protocol = protocol
        self.sock = stream.socket
        self.sock.setblocking(False)

    async def run(self, *, exec_: bool) -> None:
        output = asyncio.create_task(self._output())
        client = asyncio.create_task(self._input())
        done, _ = await asyncio.wait({output, client}, return_when=asyncio.FIRST_COMPLETED)
        if output not in done:  # the client went away: stop reading from the runtime
            output.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await output
            return
        client.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await client
        code = await asyncio.to_thread(self.stream.exit_code) if exec_ else 0
        status = ch.exit_status(code, list(self.options.command))
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.ws.send_bytes(ch.encode(ch.ERROR, ch.status_bytes(status)))
        await self.ws.close()

    async def _output(self) -> None:
        loop = asyncio.get_running_loop()
        demux = ch.Demuxer() if self.stream.multiplexed else None
        wanted = {ch.STDOUT: self.options.stdout, ch.STDERR: self.options.stderr}
        while True:
            try:
                data = await loop.sock_recv(self.sock, READ_SIZE)
            except OSError as exc:
                log.debug("container stream ended: %s", exc)
                return
            if not data:
                return
            for channel, payload in demux.feed(data) if demux is not None else [(ch.STDOUT, data)]:
                if wanted.get(channel):
                    await self.ws.send_bytes(ch.encode(channel, payload))

    async def _input(self) -> None:
        loop = asyncio.get_running_loop()
        async for message in self.ws:
            if message.type is not WSMsgType.BINARY:
                continue
            decoded = ch.decode(message.data, self.protocol)
            if decoded is None:
                continue
            try:
                if decoded.channel == ch.STDIN and self.options.stdin:
                    if decoded.closed:
                        self.sock.shutdown(socket.SHUT_WR)
                    elif decoded.data:
                        await loop.sock_sendall(self.sock, decoded.data)
                elif decoded.channel == ch.RESIZE and self.options.tty and not decoded.closed:
                    size = ch.parse_resize(decoded.data)
                    if size is not None:
                        await asyncio.to_thread(self.stream.resize, *size)
            except (OSError, RuntimeFailure) as exc:  # the process is gone or closed its stdin
                log.debug("container stream input: %s", exc)
