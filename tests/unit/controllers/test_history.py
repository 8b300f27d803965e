"""control/controllers/shared/history.py: hashes, names, ordering, truncation (pure) and the collision loop of
`History.create_controller_revision` against the fake API server."""

from __future__ import annotations

import pytest

from control.apimachinery.labels import selector_from_set
from control.client.informer import InformerFactory
from control.controllers.shared import history
from control.controllers.shared.helpers import fnv32
from control.controllers.shared.history import (
    CONTROLLER_REVISION_HASH_LABEL,
    History,
    equal_revision,
    hash_revision,
    max_revision,
    new_controller_revision,
    revision_name,
    revisions_to_truncate,
    sort_revisions,
)
from tests.support.fake_apiserver import FakeAPIServer

PARENT = {"metadata": {"name": "web", "namespace": "ns", "uid": "u1"}}


def rev(name: str, number: int, created: str = "2024-01-01T00:00:00Z", data: object = None) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "creationTimestamp": created,
                         "labels": {CONTROLLER_REVISION_HASH_LABEL: name}},
            "revision": number, "data": data if data is not None else {"n": name}}


def test_fnv32_is_fnv1_not_fnv1a():
    # Reference values of FNV-1 32 (Go hash/fnv New32): "" is the offset basis, "a" is 0x050c5d7e.
    assert fnv32(b"") == 0x811C9DC5
    assert fnv32(b"a") == 0x050C5D7E


def test_hash_depends_on_data_and_collision_count_and_uses_the_safe_alphabet():
    base = hash_revision({"spec": 1}, None)
    assert base == hash_revision({"spec": 1}, None)
    assert base != hash_revision({"spec": 2}, None)
    assert base != hash_revision({"spec": 1}, 0) != hash_revision({"spec": 1}, 1)
    assert set(base) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_revision_name_cuts_the_prefix_to_223_characters():
    assert revision_name("web", "abc") == "web-abc"
    assert revision_name("x" * 300, "abc") == "x" * 223 + "-abc"


def test_new_controller_revision_labels_owner_and_name():
    revision = new_controller_revision(PARENT, api_version="apps/v1", kind="StatefulSet",
                                       template_labels={"app": "web"}, data={"spec": {}}, revision=3,
                                       collision_count=None)
    hash_ = hash_revision({"spec": {}}, None)
    assert revision["metadata"]["name"] == f"web-{hash_}"
    assert revision["metadata"]["labels"] == {"app": "web", CONTROLLER_REVISION_HASH_LABEL: hash_}
    assert revision["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert revision["metadata"]["ownerReferences"][0]["controller"] is True
    assert revision["revision"] == 3 and revision["data"] == {"spec": {}}


def test_sort_equal_and_max():
    a, b, c = rev("a", 2), rev("b", 1, "2024-01-02T00:00:00Z"), rev("c", 1, "2024-01-01T00:00:00Z")
    assert [r["metadata"]["name"] for r in sort_revisions([a, b, c])] == ["c", "b", "a"]
    assert max_revision([a, b, c]) == 2 and max_revision([]) == 0
    assert equal_revision(rev("x", 1, data={"d": 1}), rev("x", 5, data={"d": 1}))
    assert not equal_revision(rev("x", 1, data={"d": 1}), rev("x", 1, data={"d": 2}))
    assert not equal_revision(rev("x", 1, data={"d": 1}), rev("y", 1, data={"d": 1}))  # hash labels differ


@pytest.mark.parametrize(("live", "limit", "deleted"), [
    pytest.param(set(), 2, ["r1", "r2"], id="oldest-dead-go-first"),
    pytest.param({"r1"}, 2, ["r2"], id="live-never-deleted"),
    pytest.param({"r1", "r2", "r3"}, 0, ["r4"], id="limit-zero-keeps-only-live"),
    pytest.param(set(), 10, [], id="under-the-limit"),
])
def test_revisions_to_truncate(live, limit, deleted):
    revisions = [rev(f"r{i}", i) for i in (4, 2, 3, 1)]
    assert [r["metadata"]["name"] for r in revisions_to_truncate(revisions, live=live, limit=limit)] == deleted


def test_create_renames_on_a_collision_with_other_data_and_reuses_equal_data():
    api = FakeAPIServer()
    client = api.client("test")
    hist = History(client, InformerFactory(client).informer("apps/v1", "controllerrevisions").lister())
    wanted = new_controller_revision(PARENT, api_version="apps/v1", kind="StatefulSet", template_labels={"app": "web"},
                                     data={"v": 1}, revision=1, collision_count=0)
    squatter = {**wanted, "data": {"v": "other"}, "metadata": {**wanted["metadata"], "ownerReferences": []}}
    client.create(history.revision_path("ns"), squatter)
    created, count = hist.create_controller_revision(PARENT, wanted, 0)
    assert count == 1
    assert created["metadata"]["name"] == f"web-{hash_revision({'v': 1}, 1)}" and created["data"] == {"v": 1}
    again, count_again = hist.create_controller_revision(PARENT, wanted, 1)
    assert again["metadata"]["uid"] == created["metadata"]["uid"] and count_again == 1


def test_list_keeps_own_and_orphans_and_truncate_deletes():
    api = FakeAPIServer()
    client = api.client("test")
    for name, uid in (("mine", "u1"), ("theirs", "u2"), ("orphan", None)):
        refs = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x", "uid": uid,
                 "controller": True}] if uid else []
        client.create(history.revision_path("ns"), {"metadata": {"name": name, "labels": {"app": "web"},
                                                                 "ownerReferences": refs},
                                                    "data": {}, "revision": 1})
    informer = InformerFactory(client).informer("apps/v1", "controllerrevisions")
    for item in client.list(history.revision_path("ns"))["items"]:
        informer.store.add(item)
    hist = History(client, informer.lister())
    found = hist.list_controller_revisions(PARENT, selector_from_set({"app": "web"}))
    assert sorted(r["metadata"]["name"] for r in found) == ["mine", "orphan"]
    hist.truncate(found, live={"mine"}, limit=0)
    left = client.list(history.revision_path("ns"))["items"]
    assert sorted(r["metadata"]["name"] for r in left) == ["mine", "theirs"]
