"""Watch clients that vanish mid-stream (a TCP reset while the server is still sending the initial
events over TLS): each watch ends as a routine matter — a debug line, no ERROR, no traceback, and not the
flood of asyncio "socket.send() raised exception." WARNINGs that writing on into a dead connection causes.
A real API server on 127.0.0.1, raw sockets for the clients."""

from __future__ import annotations

import logging
import socket
import ssl
import struct
import time
from collections.abc import Iterator

import pytest

from tests.support.apiserver import Endpoint, ThreadServer
from tests.support.polling import wait_until

OBJECTS = 200


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ThreadServer, Endpoint]]:
    thread_server = ThreadServer(str(tmp_path_factory.mktemp("watch-disconnects")))
    endpoint = thread_server.start()
    try:
        for index in range(OBJECTS):
            answer = endpoint.request("POST", "/api/v1/namespaces/default/configmaps",
                                      json={"metadata": {"name": f"c{index}"}, "data": {"k": "v" * 2000}})
            assert answer.status_code == 201
        yield thread_server, endpoint
    finally:
        thread_server.stop()


def _watch_then_reset(endpoint: Endpoint, delay: float) -> None:
    host, port = endpoint.url.removeprefix("https://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=endpoint.ca)
    with socket.create_connection((host, int(port))) as raw:
        tls = context.wrap_socket(raw, server_hostname=host)
        tls.sendall(f"GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: {host}\r\n"
                    f"Authorization: Bearer {endpoint.token}\r\n\r\n".encode())
        time.sleep(delay)
        tls.recv(100)
        tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a RST
        tls.close()


def test_reset_watch_clients_leave_no_error_and_no_warning_flood(server, caplog: pytest.LogCaptureFixture) -> None:
    thread_server, endpoint = server
    caplog.set_level(logging.DEBUG)
    for delay in (0.0, 0.005, 0.02, 0.05) * 3:
        _watch_then_reset(endpoint, delay)
    # every watch ended (its subscription given back), whichever way it noticed the client was gone; the
    # server's own watch of CustomResourceDefinitions (run-time resources) is not a client's
    cache = thread_server.server._cache
    assert cache is not None
    assert wait_until(lambda: not [s for s in cache._subscribers if s.prefix.startswith("/registry/configmaps/")],
                      timeout=10), "a watch outlived its client"
    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert noisy == [], [f"{r.name}: {r.getMessage()}" for r in noisy[:5]]
