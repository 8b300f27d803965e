"""API servers for tests: in a thread of the test process (fast, for API behaviour) or as a real
`slimkube server` process (for kill -9, restarts and the CLI contract). Both listen on 127.0.0.1 on a
free port with their own data directory, and are stopped by the test that started them."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import requests

from control.apiserver.server import APIServer, ServerConfig


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Endpoint:
    """What a test needs to talk to a server: its URL, token and kubeconfig path."""

    url: str
    token: str
    kubeconfig: str
    ca: str | None = None  # the CA file to verify an https server with
    session: requests.Session = field(default_factory=requests.Session)

    def __post_init__(self) -> None:
        self.session.headers["Authorization"] = f"Bearer {self.token}"

    @property
    def verify(self) -> str | bool:
        """What to pass as `verify=` to a bare `requests` call."""
        return self.ca or True

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", 30)
        kwargs.setdefault("verify", self.verify)  # per request: REQUESTS_CA_BUNDLE would override session.verify
        return self.session.request(method, self.url + path, **kwargs)


class ThreadServer:
    """An APIServer on its own event loop thread."""

    def __init__(self, data_dir: str, **config) -> None:
        # No controller manager runs beside it, so no namespace gets its `default` service account: the
        # ServiceAccount admission plugin is off unless a test asks for it (upstream's integration framework
        # starts its API servers the same way).
        config.setdefault("disable_admission_plugins", ("ServiceAccount",))
        self.config = ServerConfig(data_dir=data_dir, bind_address="127.0.0.1", port=0, **config)
        self.server = APIServer(self.config)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="test-apiserver", daemon=True)

    def start(self) -> Endpoint:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(timeout=60)
        certs = self.server.certs
        return Endpoint(self.server.url, self.server.admin_token, self.server.kubeconfig_path,
                        certs.ca_path if certs else None)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


@contextmanager
def running_server(data_dir: str, **config) -> Iterator[Endpoint]:
    """A ThreadServer for the duration of a `with` block (a test module's fixture), stopped even when the
    block fails."""
    server = ThreadServer(data_dir, **config)
    endpoint = server.start()
    try:
        yield endpoint
    finally:
        server.stop()


class ProcessServer:
    """`slimkube server` as a child process (killed by PID, never by name)."""

    def __init__(self, data_dir: str, *, port: int | None = None, datastore: str = "sqlite://",
                 args: tuple[str, ...] = ()) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.datastore = datastore
        self.args = args  # more `slimkube server` flags, e.g. ("--disable", "endpoint")
        self.process: subprocess.Popen | None = None
        self.log_path = os.path.join(data_dir, "server.log")

    def start(self, timeout: float = 60) -> Endpoint:
        os.makedirs(self.data_dir, exist_ok=True)
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "slimkube.cli", "server", "--data-dir", self.data_dir, "--bind-address",
             "127.0.0.1", "--port", str(self.port), "--datastore", self.datastore, *self.args],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        url = f"https://127.0.0.1:{self.port}"
        ca = os.path.join(self.data_dir, "tls", "ca.crt")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"slimkube server exited with {self.process.returncode}: {self.log()}")
            try:
                if os.path.exists(ca) and os.path.exists(os.path.join(self.data_dir, "admin.kubeconfig")) and (
                        requests.get(url + "/readyz", timeout=1, verify=ca).status_code == 200):
                    with open(os.path.join(self.data_dir, "admin-token"), encoding="utf-8") as handle:
                        token = handle.read().strip()
                    return Endpoint(url, token, os.path.join(self.data_dir, "admin.kubeconfig"), ca)
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"slimkube server not ready after {timeout}s: {self.log()}")

    def log(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                return handle.read()[-4000:]
        except FileNotFoundError:
            return ""

    def kill(self) -> None:
        """SIGKILL: no chance to flush or clean up, as a crash."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
