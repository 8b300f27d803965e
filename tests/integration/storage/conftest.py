"""Fixtures for the storage contract: a throwaway etcd, and `store` parametrised over both backends.

etcd runs once per session on free 127.0.0.1 ports with its data under the session's tmp dir; it is
stopped by PID and waited for at teardown, also when a test or the start itself failed. Without an
etcd binary the etcd half is skipped on a developer's machine and FAILS under CI=true.
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from control.storage.etcd import EtcdStorage
from control.storage.interface import Storage
from control.storage.sqlite import SQLiteStorage
from tests.conftest import unavailable
from tests.support.etcd import ETCD, etcd_binary, running_etcd

TEST_PREFIX = "/registry/"  # every contract test writes under it; wiped before each etcd test


def _etcd_binary() -> str:
    """The etcd to run; skips without one, and fails under CI=true."""
    binary = etcd_binary()
    if binary is None:
        unavailable("etcd", f"not installed ({ETCD} missing; run ./install.sh or apt-get install etcd-server)")
    return binary


@pytest.fixture(scope="session")
def etcd_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """http://127.0.0.1:PORT of an etcd shared by the session."""
    with running_etcd(tmp_path_factory.mktemp("etcd"), _etcd_binary()) as (endpoint, _):
        yield endpoint


@pytest.fixture
def own_etcd(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """An etcd of this test's own, for tests that stop it."""
    with running_etcd(tmp_path, _etcd_binary()) as started:
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
