"""The informer cache (control/client/store.py): keys, indices kept exact through every write, listers."""

from __future__ import annotations

import threading

import pytest

from control.apimachinery import labels
from control.client.store import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    OWNER_UID_INDEX,
    STANDARD_INDEXERS,
    Lister,
    Store,
)


def pod(name: str, namespace: str = "default", *, node: str = "", owners: tuple[str, ...] = (),
        app: str = "", rv: str = "1") -> dict:
    metadata: dict = {"name": name, "namespace": namespace, "resourceVersion": rv}
    if owners:
        metadata["ownerReferences"] = [{"uid": uid, "kind": "ReplicaSet", "name": "rs"} for uid in owners]
    if app:
        metadata["labels"] = {"app": app}
    spec = {"nodeName": node} if node else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def test_keys_namespaced_and_cluster_scoped() -> None:
    store = Store()
    store.add(pod("a", "ns1"))
    store.add(node("n1"))
    assert sorted(store.list_keys()) == ["n1", "ns1/a"]
    assert store.get_by_key("ns1/a")["metadata"]["name"] == "a"
    assert store.get(node("n1"))["kind"] == "Node"
    assert store.get_by_key("default/a") is None


def test_add_update_delete_return_previous_and_share_objects() -> None:
    store = Store()
    first = pod("a", rv="1")
    assert store.add(first) is None
    second = pod("a", rv="2")
    assert store.update(second) is first
    assert store.get_by_key("default/a") is second  # the very dict: shared, read-only by contract
    assert store.delete(pod("a")) is second
    assert store.delete(pod("a")) is None
    assert len(store) == 0


def test_standard_indices_follow_updates_and_deletes() -> None:
    store = Store(indexers=STANDARD_INDEXERS)
    store.add(pod("a", "ns1", node="n1", owners=("u1",)))
    store.add(pod("b", "ns1", node="n2", owners=("u1", "u2")))
    store.add(pod("c", "ns2"))
    assert store.index_keys(NAMESPACE_INDEX, "ns1") == ["ns1/a", "ns1/b"]
    assert store.index_keys(NODE_NAME_INDEX, "n1") == ["ns1/a"]
    assert store.index_keys(NODE_NAME_INDEX, "") == ["ns2/c"]  # unscheduled
    assert store.index_keys(OWNER_UID_INDEX, "u1") == ["ns1/a", "ns1/b"]
    # a pod moves node and loses an owner: both indices move it
    store.update(pod("b", "ns1", node="n1", owners=("u2",)))
    assert store.index_keys(NODE_NAME_INDEX, "n1") == ["ns1/a", "ns1/b"]
    assert store.index_keys(NODE_NAME_INDEX, "n2") == []
    assert store.index_keys(OWNER_UID_INDEX, "u1") == ["ns1/a"]
    assert "n2" not in store.index_values(NODE_NAME_INDEX)  # no empty entries left behind
    store.delete(pod("a", "ns1"))
    assert [p["metadata"]["name"] for p in store.by_index(OWNER_UID_INDEX, "u1")] == []
    assert [p["metadata"]["name"] for p in store.by_index(NODE_NAME_INDEX, "n1")] == ["b"]


def test_replace_rebuilds_indices() -> None:
    store = Store(indexers=STANDARD_INDEXERS)
    store.add(pod("old", node="n1"))
    store.replace([pod("new1", node="n2"), pod("new2", node="n2")])
    assert sorted(store.list_keys()) == ["default/new1", "default/new2"]
    assert store.index_keys(NODE_NAME_INDEX, "n1") == []
    assert store.index_keys(NODE_NAME_INDEX, "n2") == ["default/new1", "default/new2"]


def test_custom_indexer_added_late_indexes_existing_items() -> None:
    store = Store()
    store.add(pod("a", app="web"))
    store.add(pod("b", app="db"))
    store.add_indexers({"app": lambda obj: [obj["metadata"].get("labels", {}).get("app", "")]})
    assert store.index_keys("app", "web") == ["default/a"]
    store.add(pod("c", app="web"))
    assert store.index_keys("app", "web") == ["default/a", "default/c"]
    with pytest.raises(ValueError):
        store.add_indexers({"app": lambda obj: []})
    with pytest.raises(KeyError):
        store.by_index("nope", "x")


def test_concurrent_writers_leave_items_and_indices_consistent() -> None:
    store = Store(indexers=STANDARD_INDEXERS)

    def writer(index: int) -> None:
        for i in range(300):
            name = f"p{i % 20}"
            if i % 3 == 2:
                store.delete(pod(name, f"ns{index}"))
            else:
                store.update(pod(name, f"ns{index}", node=f"n{i % 4}", rv=str(i)))

    threads = [threading.Thread(target=writer, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    items = store.items()
    for node_name in store.index_values(NODE_NAME_INDEX):
        expected = sorted(k for k, o in items.items() if o["spec"].get("nodeName", "") == node_name)
        assert store.index_keys(NODE_NAME_INDEX, node_name) == expected
    indexed = {k for value in store.index_values(NAMESPACE_INDEX) for k in store.index_keys(NAMESPACE_INDEX, value)}
    assert indexed == set(items)


@pytest.mark.parametrize("namespace, selector, expected", [
    pytest.param(None, None, ["a", "b", "c"], id="everything"),
    pytest.param("ns1", None, ["a", "b"], id="namespace"),
    pytest.param(None, "app=web", ["a", "c"], id="selector-string"),
    pytest.param("ns1", labels.parse_selector("app in (web)"), ["a"], id="namespace-and-selector"),
    pytest.param("ns3", None, [], id="empty-namespace"),
])
def test_lister_list(namespace: str | None, selector: object, expected: list[str]) -> None:
    for store in (Store(indexers=STANDARD_INDEXERS), Store(indexers={})):  # with and without the index
        store.add(pod("a", "ns1", app="web"))
        store.add(pod("b", "ns1", app="db"))
        store.add(pod("c", "ns2", app="web"))
        names = sorted(o["metadata"]["name"] for o in Lister(store).list(namespace, selector))
        assert names == expected


def test_lister_get() -> None:
    store = Store()
    store.add(pod("a", "ns1"))
    store.add(node("n1"))
    lister = Lister(store)
    assert lister.get("ns1", "a")["metadata"]["name"] == "a"
    assert lister.get("ns2", "a") is None
    assert lister.get(None, "n1")["kind"] == "Node"
    assert lister.get("", "n1")["kind"] == "Node"
