"""control/util/loopthread.py: a loop on its own thread, an app served on a free port, no half-made server left
when binding fails."""

from __future__ import annotations

import socket
import threading
import urllib.request

import pytest
from aiohttp import web

from control.util.loopthread import LoopThread, serve_app


async def _hello(request: web.Request) -> web.Response:
    return web.Response(text=threading.current_thread().name)


def test_an_app_is_served_from_the_loops_thread_on_the_port_it_bound():
    thread = LoopThread("sktest-loop")
    thread.start()
    try:
        app = web.Application()
        app.router.add_get("/", _hello)
        runner, port = thread.run(serve_app(app, "127.0.0.1", 0, shutdown_timeout=0.1))
        assert port > 0
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
            assert answer.read() == b"sktest-loop"
        thread.run(runner.cleanup())
    finally:
        thread.stop()
    assert not thread.running
    thread.stop()  # idempotent


def test_a_port_in_use_raises_and_leaves_no_runner():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        thread = LoopThread("sktest-loop")
        thread.start()
        try:
            with pytest.raises(OSError):
                thread.run(serve_app(web.Application(), "127.0.0.1", taken.getsockname()[1], shutdown_timeout=0.1))
        finally:
            thread.stop()


def test_run_before_start_is_an_error():
    with pytest.raises(RuntimeError):
        LoopThread("sktest-loop").run(_hello(None))  # type: ignore[arg-type]
