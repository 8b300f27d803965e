"""The RBAC objects in memory, indexed by subject: the same answers as reading every binding from the store,
kept current as objects change, and `catch_up` waiting for the follower."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from control.apiserver.authentication.tokens import UserInfo
from control.apiserver.authorization import bootstrappolicy, follower
from control.apiserver.authorization.attributes import request_attributes
from control.apiserver.authorization.policycache import PolicyCache, subject_key, user_keys
from control.apiserver.authorization.rbac import RBACAuthorizer
from control.apiserver.authorization.source import StoragePolicySource
from control.storage.sqlite import SQLiteStorage

RBAC = "rbac.authorization.k8s.io"


def key_of(obj: dict[str, Any]) -> str:
    plural = obj["kind"].lower() + "s"
    namespace = obj["metadata"].get("namespace")
    return f"/registry/{plural}/{namespace}/{obj['metadata']['name']}" if namespace else \
        f"/registry/{plural}/{obj['metadata']['name']}"


def binding(kind: str, name: str, role: tuple[str, str], *subjects: dict[str, str],
            namespace: str = "") -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": metadata, "roleRef": {"apiGroup": RBAC, "kind": role[0], "name": role[1]},
            "subjects": list(subjects)}


OBJECTS = [
    *bootstrappolicy.all_cluster_roles(), *bootstrappolicy.all_cluster_role_bindings(),
    {"kind": "Role", "metadata": {"name": "cm", "namespace": "team"},
     "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]},
    binding("RoleBinding", "alice", ("Role", "cm"), {"kind": "User", "name": "alice"}, namespace="team"),
    binding("RoleBinding", "devs", ("ClusterRole", "view"), {"kind": "Group", "name": "devs"}, namespace="team"),
    binding("RoleBinding", "robot", ("ClusterRole", "edit"), {"kind": "ServiceAccount", "name": "robot"},
            namespace="team"),
    binding("ClusterRoleBinding", "carol", ("ClusterRole", "missing"), {"kind": "User", "name": "carol"}),
]
USERS = [UserInfo("alice"), UserInfo("bob", groups=("devs",)), UserInfo("system:serviceaccount:team:robot"),
         UserInfo("system:serviceaccount:other:robot"), UserInfo("carol"), UserInfo("nobody")]
REQUESTS = [("GET", "/api/v1/namespaces/team/configmaps"), ("GET", "/api/v1/namespaces/team/pods"),
            ("POST", "/apis/apps/v1/namespaces/team/deployments"), ("GET", "/api/v1/namespaces/other/pods"),
            ("GET", "/apis"), ("GET", "/api/v1/nodes")]


@pytest.fixture
def storage(tmp_path: Path) -> SQLiteStorage:
    store = SQLiteStorage(str(tmp_path / "state.db"))
    for obj in OBJECTS:
        store.create(key_of(obj), json.dumps(obj).encode())
    return store


def test_subject_keys() -> None:
    assert subject_key({"kind": "ServiceAccount", "name": "sa"}, "ns") == ("ServiceAccount", "ns", "sa")
    assert subject_key({"kind": "ServiceAccount", "name": "sa"}, "") is None
    assert subject_key({"kind": "Group", "name": "g"}, "ns") == ("Group", "g")
    assert user_keys(UserInfo("system:serviceaccount:ns:sa"), ["g"]) == [
        ("User", "system:serviceaccount:ns:sa"), ("Group", "g"), ("ServiceAccount", "ns", "sa")]


def test_the_index_answers_as_the_store_does(storage: SQLiteStorage) -> None:
    cache = PolicyCache(storage)
    follower.load([cache], storage)
    indexed, direct = RBACAuthorizer(cache), RBACAuthorizer(StoragePolicySource(storage))
    for user in USERS:
        for method, path in REQUESTS:
            attributes = request_attributes(user, method, path, {})
            assert indexed.authorize(attributes) == direct.authorize(attributes), (user.username, method, path)
    assert cache.cluster_role_bindings() == sorted(StoragePolicySource(storage).cluster_role_bindings(),
                                                   key=lambda b: b["metadata"]["name"])


def test_changes_reach_the_index(storage: SQLiteStorage) -> None:
    cache = PolicyCache(storage)
    follower.load([cache], storage)
    rbac = RBACAuthorizer(cache)
    list_configmaps = request_attributes(UserInfo("alice"), "GET", "/api/v1/namespaces/team/configmaps", {})
    assert rbac.authorize(list_configmaps).allowed
    cache.apply("/registry/rolebindings/team/alice", None)
    assert not rbac.authorize(list_configmaps).allowed
    moved = binding("RoleBinding", "alice", ("Role", "cm"), {"kind": "Group", "name": "friends"}, namespace="team")
    cache.apply("/registry/rolebindings/team/alice", moved)
    assert rbac.authorize(request_attributes(UserInfo("eve", groups=("friends",)), "GET",
                                             "/api/v1/namespaces/team/configmaps", {})).allowed
    cache.apply("/registry/roles/team/cm", None)
    assert rbac.authorize(request_attributes(UserInfo("eve", groups=("friends",)), "GET",
                                             "/api/v1/namespaces/team/configmaps", {})).reason == (
        'RBAC: role.rbac.authorization.k8s.io "cm" not found')


def test_a_refusal_waits_for_the_follower_to_catch_up(storage: SQLiteStorage) -> None:
    cache = PolicyCache(storage)
    follower.load([cache], storage)
    rbac = RBACAuthorizer(cache, catch_up=cache.catch_up)
    newcomer = binding("RoleBinding", "dave", ("Role", "cm"), {"kind": "User", "name": "dave"}, namespace="team")
    record = storage.create("/registry/rolebindings/team/dave", json.dumps(newcomer).encode())

    def deliver() -> None:  # what the follower does once the watch cache hands the event over
        cache.apply(record.key, newcomer)
        cache.caught_up(record.mod_revision)

    timer = threading.Timer(0.05, deliver)
    timer.start()
    try:
        assert rbac.authorize(request_attributes(UserInfo("dave"), "GET", "/api/v1/namespaces/team/configmaps",
                                                 {})).allowed
    finally:
        timer.join()
    assert not cache.catch_up()  # nothing newer: no wait, nothing moved
