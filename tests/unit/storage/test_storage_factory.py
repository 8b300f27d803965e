"""`open_storage`: the --datastore URL forms (docs/storage.md), and clear refusals of the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from control.storage.etcd import EtcdStorage
from control.storage.factory import open_storage
from control.storage.sqlite import SQLiteStorage


def test_sqlite_default_is_state_db_in_data_dir(tmp_path: Path) -> None:
    store = open_storage("sqlite://", data_dir=str(tmp_path / "data"))
    try:
        assert isinstance(store, SQLiteStorage)
        store.create("/a", b"1")
    finally:
        store.close()
    assert (tmp_path / "data" / "state.db").exists()


def test_sqlite_absolute_path(tmp_path: Path) -> None:
    store = open_storage(f"sqlite://{tmp_path}/elsewhere/x.db", data_dir="/nonexistent")
    store.close()
    assert (tmp_path / "elsewhere" / "x.db").exists()


@pytest.mark.parametrize(
    "url, endpoint",
    [("etcd://127.0.0.1:2379", "http://127.0.0.1:2379"), ("etcd://etcd.local", "http://etcd.local:2379"),
     ("etcd://[::1]:23790", "http://[::1]:23790")],
)
def test_etcd(url: str, endpoint: str) -> None:
    store = open_storage(url, data_dir="/nonexistent")  # no connection is made until the first call
    try:
        assert isinstance(store, EtcdStorage)
        assert store._endpoint == endpoint
    finally:
        store.close()


@pytest.mark.parametrize(
    "url, message",
    [
        pytest.param("sqlite://relative.db", "must be absolute", id="sqlite-relative"),
        pytest.param("etcd+https://127.0.0.1:2379", "TLS", id="etcd-tls"),
        pytest.param("etcd://127.0.0.1:notaport", "accepted", id="bad-port"),
        pytest.param("etcd://", "expected etcd://host:port", id="etcd-no-host"),
        pytest.param("etcd://h:1/prefix", "expected etcd://host:port", id="etcd-path"),
        pytest.param("sqlite:///x.db?mode=ro", "no query", id="query"),
        pytest.param("postgres://db/kine", "accepted: sqlite://", id="unknown-scheme"),
        pytest.param("/var/lib/slimkube/state.db", "accepted: sqlite://", id="bare-path"),
    ],
)
def test_refused(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        open_storage(url, data_dir="/tmp")
