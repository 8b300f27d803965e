"""Open streams end at once when an aiohttp runner stops (control/util/openstreams.py): a stream handler is
cancelled and its cleanup runs, a WebSocket client sees 1001 Going Away, and an ordinary request in flight
still gets the runner's shutdown time to finish."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from aiohttp import WSCloseCode, web

from control.util.openstreams import OpenStreams
from tests.support.apiserver import free_port

SHUTDOWN_TIMEOUT = 10.0  # what the runner would wait for each request without OpenStreams


def test_streams_end_at_once_and_other_requests_finish() -> None:
    events: list[str] = []

    async def stream(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(timeout=1.0)
        await ws.prepare(request)
        try:
            async for _ in ws:
                pass
        except asyncio.CancelledError:
            events.append("stream cancelled")
            await ws.close(code=WSCloseCode.GOING_AWAY)
            raise
        return ws

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(0.5)
        events.append("slow finished")
        return web.Response(text="done")

    async def main() -> None:
        app = web.Application()
        streams = OpenStreams(lambda request: request.path.startswith("/stream"))
        streams.install(app)
        app.router.add_get("/stream", stream)
        app.router.add_get("/slow", slow)
        runner = web.AppRunner(app, shutdown_timeout=SHUTDOWN_TIMEOUT)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        async with aiohttp.ClientSession() as session:
            sockets = [await session.ws_connect(f"http://127.0.0.1:{port}/stream") for _ in range(3)]
            slow_answer = asyncio.create_task(session.get(f"http://127.0.0.1:{port}/slow"))
            while len(streams) < 3:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)  # the slow request is in flight
            started = time.monotonic()
            await runner.cleanup()
            took = time.monotonic() - started
            assert took < 2.0, took
            for ws in sockets:
                assert (await ws.receive()).type is aiohttp.WSMsgType.CLOSE
                assert ws.close_code == WSCloseCode.GOING_AWAY
            assert (await (await slow_answer).text()) == "done"
        assert events.count("stream cancelled") == 3 and "slow finished" in events
        assert len(streams) == 0

    asyncio.run(main())
