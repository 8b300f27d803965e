"""A client that goes away mid-answer is a routine end: no ERROR record, no traceback (aiohttp logs any
exception a handler lets out as "Error handling request" at ERROR — ClientConnectionResetError included,
which a watch stream or a log relay meets on its next write)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import aiohttp
import pytest
from aiohttp import ClientConnectionResetError, web
from aiohttp.test_utils import TestClient, TestServer

from control.apiserver import server


async def _serve_once(handler) -> int:
    app = web.Application(middlewares=[server._errors])
    app.router.add_get("/watch", handler)
    async with TestClient(TestServer(app)) as client:
        async with client.get("/watch") as answer:
            return answer.status


@pytest.mark.parametrize("where", ["before-headers", "mid-stream"])
def test_a_reset_connection_is_logged_at_debug_only(caplog: pytest.LogCaptureFixture, where: str) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        if where == "mid-stream":
            await response.prepare(request)
            await response.write(b"{}\n")
        raise ClientConnectionResetError("Cannot write to closing transport")

    caplog.set_level(logging.DEBUG)
    with contextlib.suppress(aiohttp.ClientError):  # the client may see the connection drop: the log matters
        asyncio.run(_serve_once(handler))
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert any("the client disconnected" in r.getMessage() for r in caplog.records)
