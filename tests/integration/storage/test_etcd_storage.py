"""What only the etcd backend has to show: an etcd that goes away is `Unavailable`, for calls and for
watch streams alike. The shared contract is in test_storage_contract.py."""

from __future__ import annotations

import subprocess
import time

import pytest

from control.storage.etcd import EtcdStorage
from control.storage.interface import EventType, Unavailable


def test_etcd_going_away_is_unavailable(own_etcd: tuple[str, subprocess.Popen]) -> None:
    endpoint, proc = own_etcd
    store = EtcdStorage(endpoint)
    try:
        watch = store.watch("/registry/", after=store.revision())
        store.create("/registry/a", b"1")
        assert [e.type for e in watch.next(5)] == [EventType.ADDED]
        proc.terminate()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        with pytest.raises(Unavailable):
            while time.monotonic() < deadline:
                watch.next(0.2)
        with pytest.raises(Unavailable):
            store.get("/registry/a")
        with pytest.raises(Unavailable):
            store.watch("/registry/", after=0)
    finally:
        store.close()
