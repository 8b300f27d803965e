"""The etcd backend's parts that need no etcd: prefix range ends, the gateway's JSON turned into records
and events, and what an unreachable endpoint raises.

The JSON below is what etcd 3.4's gateway answered (int64s as strings, empty fields and the PUT event
type omitted); the backend itself runs against a real etcd in tests/integration/storage.
"""

from __future__ import annotations

import base64
import socket

import pytest

from control.storage.etcd import EtcdStorage, _event, _record, prefix_end
from control.storage.interface import Event, EventType, Record, Unavailable


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "prefix, end",
    [("/registry/pods/", b"/registry/pods0"), ("a", b"b"), ("", b"\0"), ("a\xff", b"a\xc3\xc0"), ("é", b"\xc3\xaa")],
)
def test_prefix_end(prefix: str, end: bytes) -> None:
    assert prefix_end(prefix) == end


def test_record_with_empty_value_omitted() -> None:
    kv = {"key": b64("/a"), "create_revision": "2", "mod_revision": "3", "version": "2"}
    assert _record(kv) == Record("/a", b"", 2, 3)


@pytest.mark.parametrize(
    "raw, event",
    [
        pytest.param(
            {"kv": {"key": b64("/a"), "create_revision": "5", "mod_revision": "5", "version": "1", "value": b64("v1")}},
            Event(EventType.ADDED, "/a", b"v1", 5, 5, None), id="put-version-1-is-added"),
        pytest.param(
            {"kv": {"key": b64("/a"), "create_revision": "5", "mod_revision": "6", "version": "2", "value": b64("v2")},
             "prev_kv": {"key": b64("/a"), "create_revision": "5", "mod_revision": "5", "version": "1",
                         "value": b64("v1")}},
            Event(EventType.MODIFIED, "/a", b"v2", 6, 5, b"v1"), id="put-is-modified"),
        pytest.param(
            {"type": "DELETE", "kv": {"key": b64("/a"), "mod_revision": "7"},
             "prev_kv": {"key": b64("/a"), "create_revision": "5", "mod_revision": "6", "version": "2",
                         "value": b64("v2")}},
            Event(EventType.DELETED, "/a", b"v2", 7, 5, b"v2"), id="delete-carries-last-value"),
        pytest.param(
            {"kv": {"key": b64("/a"), "create_revision": "2", "mod_revision": "3", "version": "2"}},
            Event(EventType.MODIFIED, "/a", b"", 3, 2, None), id="prev-kv-compacted-away"),
    ],
)
def test_event(raw: dict, event: Event) -> None:
    assert _event(raw) == event


@pytest.mark.parametrize("endpoint", ["https://127.0.0.1:2379", "127.0.0.1:2379", "http://h:1/v3"])
def test_endpoint_must_be_plain_http(endpoint: str) -> None:
    with pytest.raises(ValueError):
        EtcdStorage(endpoint)


def test_unreachable_endpoint_is_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    store = EtcdStorage(f"http://127.0.0.1:{port}")
    for call in (store.revision, lambda: store.get("/a"), lambda: store.create("/a", b"1"),
                 lambda: store.list("/"), lambda: store.watch("/", after=0)):
        with pytest.raises(Unavailable):
            call()
    store.close()
    with pytest.raises(Unavailable, match="closed"):
        store.get("/a")
