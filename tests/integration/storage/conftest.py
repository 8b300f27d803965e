"""Fixtures for the storage contract: a throwaway etcd, and `store` parametrised over both backends.

etcd runs once per session on free 127.0.0.1 ports with its data under the session's tmp dir; it is
stopped by PID and waited for at teardown, also when a test or the start itself failed. Without an
etcd binary the etcd half is skipped on a developer's machine and FAILS under CI=true.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from control.storage.etcd import EtcdStorage
from control.storage.interface import Storage
from control.storage.sqlite import SQLiteStorage

ETCD = "/usr/bin/etcd"
TEST_PREFIX = "/registry/"  # every contract test writes under it; wiped before each etcd test


def _free_ports(n: int) -> list[int]:
    """n distinct free ports (sockets held open together so the kernel cannot hand one out twice)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _wait_healthy(proc: subprocess.Popen, endpoint: str, log_path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"etcd exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}", pytrace=False)
        try:
            if requests.get(f"{endpoint}/health", timeout=1).json().get("health") == "true":
                return
        except (requests.RequestException, ValueError):
            pass
        time.sleep(0.1)
    pytest.fail(f"etcd not healthy after {timeout} s:\n{log_path.read_text()[-3000:]}", pytrace=False)


def _etcd_binary() -> str:
    """The etcd to run; skips without one, and fails under CI=true."""
    binary = ETCD if os.access(ETCD, os.X_OK) else shutil.which("etcd")
    if binary is None:
        message = f"etcd is not installed ({ETCD} missing; run ./install.sh or apt-get install etcd-server)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message} (CI=true: the etcd backend must be tested against a real etcd)", pytrace=False)
        pytest.skip(message)
    return binary


@contextmanager
def running_etcd(workdir: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """(client URL, process) of an etcd on free 127.0.0.1 ports, data in `workdir`; terminated by PID
    and waited for on the way out, whatever happened inside."""
    binary = _etcd_binary()
    client_port, peer_port = _free_ports(2)
    endpoint, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    log_path = workdir / "etcd.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [binary, "--name", "sktest", "--data-dir", str(workdir / "data"),
             "--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"sktest={peer}"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    try:
        _wait_healthy(proc, endpoint, log_path)
        yield endpoint, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def etcd_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """http://127.0.0.1:PORT of an etcd shared by the session."""
    with running_etcd(tmp_path_factory.mktemp("etcd")) as (endpoint, _):
        yield endpoint


@pytest.fixture
def own_etcd(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """An etcd of this test's own, for tests that stop it."""
    with running_etcd(tmp_path) as started:
        yield started


def _wipe(endpoint: str, prefix: str) -> None:
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    body = {"key": base64.b64encode(prefix.encode()).decode(), "range_end": base64.b64encode(end.encode()).decode()}
    requests.post(f"{endpoint}/v3/kv/deleterange", json=body, timeout=10).raise_for_status()


@pytest.fixture(params=["sqlite", "etcd"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    """A fresh store with nothing under /registry/ (etcd's history from earlier tests stays: tests read
    revisions relative to their own writes)."""
    if request.param == "sqlite":
        storage: Storage = SQLiteStorage(str(tmp_path / "state.db"))
    else:
        endpoint = request.getfixturevalue("etcd_endpoint")
        _wipe(endpoint, TEST_PREFIX)
        storage = EtcdStorage(endpoint)
    try:
        yield storage
    finally:
        storage.close()
