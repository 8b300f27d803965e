"""SIGTERM stops a standalone `slimkube server` within a few seconds while a watch is open: the watch is
shown live (an event arrives) before the signal, which comes as soon as the server answers (the handler
is armed before anything starts); afterwards the server exits 0 within STOP_SECONDS and the watcher sees
its stream end (cleanly or cut). Only an API server on a free port: no docker, no host networking.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import requests

from tests.e2e.test_exec_shutdown import STOP_SECONDS
from tests.support.apiserver import ProcessServer


def test_sigterm_stops_server_with_a_watch_open(tmp_path: Path) -> None:
    server = ProcessServer(str(tmp_path / "server"))
    endpoint = server.start()
    try:
        session = requests.Session()  # verify per request: REQUESTS_CA_BUNDLE would override Session.verify
        session.headers["Authorization"] = f"Bearer {endpoint.token}"
        base = f"{endpoint.url}/api/v1/namespaces/default/configmaps"
        with session.get(f"{base}?watch=1", stream=True, timeout=(5, 30), verify=endpoint.ca) as watch:
            assert watch.status_code == 200
            lines = watch.iter_lines()
            made = session.post(base, json={"metadata": {"name": "live"}, "data": {"a": "b"}}, timeout=10,
                                verify=endpoint.ca)
            assert made.status_code == 201, made.text
            event = json.loads(next(lines))
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "live")

            assert server.process is not None
            started = time.monotonic()
            os.kill(server.process.pid, signal.SIGTERM)  # by PID: the server this test started
            assert server.process.wait(timeout=30) == 0, server.log()
            assert time.monotonic() - started < STOP_SECONDS, server.log()
            try:
                rest = list(lines)
            except requests.exceptions.ChunkedEncodingError:  # cut, as a client sees a server go away
                rest = []
            assert rest == []  # the stream ended with no more events
    finally:
        server.kill()
