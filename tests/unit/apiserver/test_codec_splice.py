"""The fast paths of reads: orjson with the standard library's answers (codec), stored bytes spliced into
a read instead of decoded and re-encoded (registry.with_revision, Registry.list raw, watch raw lines)."""

from __future__ import annotations

import json

import pytest

from control.apiserver.codec import jsoncodec as codec
from control.apiserver.codec.jsonwire import encode_json, wire
from control.apiserver.endpoints.watch import EventLines
from control.apiserver.registry.store import Registry, decode, encode, with_revision
from control.apiserver.resources import by_path
from control.apiserver.storage.selection import parse_filter
from control.storage.interface import Event, EventType
from control.storage.sqlite import SQLiteStorage

PODS = by_path("", "v1", "pods")
NAMESPACES = by_path("", "v1", "namespaces")
SERVICE_ACCOUNTS = by_path("", "v1", "serviceaccounts")
REPLICASETS = by_path("apps", "v1", "replicasets")


@pytest.mark.parametrize("value", [
    {"a": 1, "b": [1.5, "é", None, True], "c": {"d": "x\"y\\z\n"}},
    {"big": 123456789012345678901234567890, "neg": -(2 ** 70)},
    {"int64": 2 ** 63 - 1, "min": -(2 ** 63)},
    [],
])
def test_codec_round_trips_exactly_as_the_standard_library(value):
    text = codec.dumps(value)
    assert json.loads(text) == value
    assert codec.loads(text) == value
    assert codec.loads(text.decode()) == value


def test_codec_keeps_integers_beyond_64_bits_exact_where_orjson_would_round():
    data = b'{"n":123456789012345678901234567890,"s":"1234567890123456789012"}'
    assert codec.loads(data) == {"n": 123456789012345678901234567890, "s": "1234567890123456789012"}
    assert codec.dumps({1: "non-string key"}) == b'{"1":"non-string key"}'


def test_codec_falls_back_to_the_standard_library_for_what_orjson_refuses():
    assert codec.loads(b'"\\ud800"') == "\ud800"  # a lone surrogate
    with pytest.raises(ValueError):
        codec.loads(b"{")


def _stored_pod(**metadata) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", **metadata},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def test_encode_writes_identity_first_and_with_revision_equals_decoding():
    obj = {"spec": {"x": 1}, "metadata": {"name": "p", "resourceVersion": "9"}, "kind": "Pod", "apiVersion": "v1"}
    stored = encode(obj)
    assert stored.startswith(b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}')
    spliced = with_revision(PODS, stored, 42)
    assert json.loads(spliced) == decode(stored, 42)
    assert json.loads(spliced)["metadata"]["resourceVersion"] == "42"


def test_with_revision_of_empty_metadata_and_of_values_in_another_shape():
    empty = encode({"apiVersion": "v1", "kind": "Pod", "metadata": {}})
    assert json.loads(with_revision(PODS, empty, 3)) == {"apiVersion": "v1", "kind": "Pod",
                                                         "metadata": {"resourceVersion": "3"}}
    older = json.dumps({"metadata": {"name": "p"}, "kind": "Pod", "apiVersion": "v1", "spec": {}}).encode()
    assert json.loads(with_revision(PODS, older, 5)) == decode(older, 5)
    # a value of another kind under this resource's prefix (written past the registry) is decoded too
    other = encode({"apiVersion": "v1", "kind": "Other", "metadata": {"name": "x"}})
    assert json.loads(with_revision(PODS, other, 6)) == decode(other, 6)


@pytest.fixture
def registry(tmp_path):
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    yield Registry(storage)
    storage.close()


def test_raw_list_gives_the_same_items_as_the_decoded_list(registry):
    registry.create(NAMESPACES, "", {"metadata": {"name": "ns"}})
    registry.create(SERVICE_ACCOUNTS, "ns", {"metadata": {"name": "default"}})  # what ServiceAccount admission reads
    for i in range(5):
        registry.create(PODS, "ns", {"metadata": {"name": f"p{i}", "labels": {"i": str(i)}},
                                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    # one stored in the field order of an older version, which the raw path decodes
    registry.storage.create("/registry/pods/ns/old", json.dumps(_stored_pod(name="old")).encode())
    decoded = registry.list(PODS, "ns", None)
    raw = registry.list(PODS, "ns", None, raw=True)
    assert raw.items == [] and raw.raw is not None
    assert [json.loads(item) for item in raw.raw] == decoded.items
    assert raw.resource_version == decoded.resource_version

    first = registry.list(PODS, "ns", None, limit=2, raw=True)
    assert first.raw is not None and len(first.raw) == 2 and first.continue_token
    rest = registry.list(PODS, "ns", None, continue_token=first.continue_token, raw=True)
    assert rest.raw is not None
    assert [json.loads(i) for i in first.raw + rest.raw] == decoded.items


def test_raw_list_decodes_when_a_selector_or_a_decoration_needs_the_object(registry):
    registry.create(NAMESPACES, "", {"metadata": {"name": "ns"}})
    registry.create(SERVICE_ACCOUNTS, "ns", {"metadata": {"name": "default"}})  # what ServiceAccount admission reads
    registry.create(PODS, "ns", {"metadata": {"name": "a", "labels": {"app": "x"}},
                                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    selected = registry.list(PODS, "ns", parse_filter(PODS, "app=x", ""), raw=True)
    assert selected.raw is None and [o["metadata"]["name"] for o in selected.items] == ["a"]
    assert registry.strategy(REPLICASETS).decorates and not registry.strategy(PODS).decorates
    replicaset = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "d", "namespace": "ns"},
                  "spec": {"selector": {"matchLabels": {"a": "b"}},
                           "template": {"metadata": {"labels": {"a": "b"}},
                                        "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    # stored without its status (as by an older version): a read still shows the zero values
    registry.storage.create("/registry/replicasets/ns/d", encode(replicaset))
    page = registry.list(REPLICASETS, "ns", None, raw=True)
    assert page.raw is None and page.items[0]["status"]["replicas"] == 0


def test_raw_watch_line_equals_the_encoded_line():
    stored = encode(_stored_pod())
    event = Event(EventType.MODIFIED, "/registry/pods/ns/p", stored, 7, 3, prev_value=stored)
    lines = EventLines()
    raw = lines.raw_line(PODS, event, "MODIFIED")
    assert raw.endswith(b"\n")
    assert json.loads(raw) == {"type": "MODIFIED", "object": decode(stored, 7)}
    assert lines.line(7, event.key, "MODIFIED", decode(stored, 7)) is raw  # one encoding per event and type
    assert lines.decoded(event) is lines.decoded(event)  # one decoding per event for every watcher


def test_spliced_bytes_carry_gos_escapes_and_utf8_as_encode_json_does():
    pod = _stored_pod(annotations={"note": "<a&b> é \u2028"})
    stored = encode(pod)
    event = Event(EventType.ADDED, "/registry/pods/ns/p", stored, 8, 8)
    line = EventLines().raw_line(PODS, event, "ADDED")
    assert json.loads(line) == {"type": "ADDED", "object": decode(stored, 8)}
    assert b"\\u003ca\\u0026b\\u003e \xc3\xa9 \\u2028" in line and b"<" not in line
    assert line == wire(line[:-1])  # nothing left to escape
    # stored by the standard library with `\u` escapes (an older version): the same value
    older = json.dumps(pod, separators=(",", ":")).encode()
    assert b"\\u00e9" in older
    assert json.loads(with_revision(PODS, older, 9)) == decode(older, 9)
    assert encode_json({"a": "<é>"}) == wire(b'{"a":"<\xc3\xa9>"}') == b'{"a":"\\u003c\xc3\xa9\\u003e"}\n'
