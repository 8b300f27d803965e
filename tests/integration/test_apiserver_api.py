"""API semantics on the wire, against a real server on 127.0.0.1 (upstream's behaviour):
resourceVersion and watch replay, selectors applied to both sides of a change, bookmarks, paging,
graceful deletion and finalizers, namespace lifecycle, quota, service allocation, auth and errors."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
import requests

from control.storage.sqlite import SQLiteStorage
from tests.support.apiserver import Endpoint, running_server


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("apiserver")), bookmark_seconds=0.5) as endpoint:
        yield endpoint


@pytest.fixture
def ns(api: Endpoint) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    assert api.request("POST", "/api/v1/namespaces", json={"metadata": {"name": name}}).status_code == 201
    return name


def pod(name: str, *, labels: dict | None = None, node: str | None = None, **spec) -> dict:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1"}], **spec}}
    if node:
        body["spec"]["nodeName"] = node
    return body


def watch_lines(api: Endpoint, path: str, *, count: int, timeout: float = 10) -> list[dict]:
    """The first `count` events of a watch (the stream is closed afterwards)."""
    events = []
    with api.request("GET", path, stream=True, timeout=timeout) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line:
                events.append(json.loads(line))
                if len(events) == count:
                    break
    return events


def test_create_sets_uid_timestamp_resource_version_and_defaults(api, ns):
    created = api.request("POST", f"/api/v1/namespaces/{ns}/pods", json=pod("a")).json()
    metadata = created["metadata"]
    assert metadata["uid"] and metadata["creationTimestamp"].endswith("Z")
    assert int(metadata["resourceVersion"]) > 0
    assert created["spec"]["restartPolicy"] == "Always"
    assert created["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert created["status"]["phase"] == "Pending"


def test_generate_name(api, ns):
    created = api.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                          json={"metadata": {"generateName": "cfg-"}}).json()
    assert created["metadata"]["name"].startswith("cfg-") and len(created["metadata"]["name"]) == 9


def test_stale_update_is_a_conflict_and_loses_nothing(api, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    first = api.request("POST", path, json={"metadata": {"name": "c"}, "data": {"a": "1"}}).json()
    first["data"]["a"] = "2"
    assert api.request("PUT", f"{path}/c", json=first).status_code == 200
    first["data"]["a"] = "3"  # still carries the old resourceVersion
    response = api.request("PUT", f"{path}/c", json=first)
    assert response.status_code == 409 and response.json()["reason"] == "Conflict"
    assert api.request("GET", f"{path}/c").json()["data"] == {"a": "2"}


def test_body_namespace_must_match_the_url(api, ns):
    body = {"metadata": {"name": "c", "namespace": "other"}}
    response = api.request("POST", f"/api/v1/namespaces/{ns}/configmaps", json=body)
    assert response.status_code == 400
    assert "does not match the namespace" in response.json()["message"]


def test_watch_from_a_revision_replays_only_what_came_after(api, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    before = api.request("POST", path, json={"metadata": {"name": "before"}}).json()["metadata"]["resourceVersion"]
    api.request("POST", path, json={"metadata": {"name": "after"}})
    api.request("DELETE", f"{path}/before")
    events = watch_lines(api, f"{path}?watch=1&resourceVersion={before}", count=2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "after"),
                                                                              ("DELETED", "before")]
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) > int(before)


def test_watch_without_revision_starts_with_synthetic_adds(api, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    for name in ("x", "y"):
        api.request("POST", path, json={"metadata": {"name": name}})
    events = watch_lines(api, f"{path}?watch=1", count=2)
    assert {(e["type"], e["object"]["metadata"]["name"]) for e in events} == {("ADDED", "x"), ("ADDED", "y")}


def test_watch_too_old_is_410(api):
    """Old revisions are served from the store's history; only a compacted one is 410. Compact the
    server's SQLite file from a second connection (as another server sharing it would)."""
    store = SQLiteStorage(os.path.join(os.path.dirname(api.kubeconfig), "state.db"))
    try:
        store.compact(2)
    finally:
        store.close()
    events = watch_lines(api, "/api/v1/configmaps?watch=1&resourceVersion=1", count=1)
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"


def test_label_selector_applies_to_both_sides_of_a_change(api, ns):
    path = f"/api/v1/namespaces/{ns}/pods"
    rv = api.request("POST", path, json=pod("p", labels={"app": "x"})).json()["metadata"]["resourceVersion"]
    patch = {"Content-Type": "application/merge-patch+json"}
    api.request("PATCH", f"{path}/p", data=json.dumps({"metadata": {"labels": {"app": "y"}}}), headers=patch)
    api.request("PATCH", f"{path}/p", data=json.dumps({"metadata": {"labels": {"app": "x"}}}), headers=patch)
    events = watch_lines(api, f"{path}?watch=1&resourceVersion={rv}&labelSelector=app%3Dx", count=2)
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]


def test_field_selector_on_node_name(api, ns):
    path = f"/api/v1/namespaces/{ns}/pods"
    api.request("POST", path, json=pod("on-a", node="a"))
    api.request("POST", path, json=pod("on-b", node="b"))
    items = api.request("GET", f"{path}?fieldSelector=spec.nodeName%3Da").json()["items"]
    assert [p["metadata"]["name"] for p in items] == ["on-a"]
    response = api.request("GET", f"{path}?fieldSelector=spec.bogus%3Da")
    assert response.status_code == 400 and "field label not supported" in response.json()["message"]


def test_bookmarks_and_timeout_end_the_stream(api, ns):
    start = time.monotonic()
    with api.request("GET", f"/api/v1/namespaces/{ns}/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=2",
                     stream=True) as response:
        threading.Timer(0.2, lambda: api.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                                                 json={"metadata": {"name": "tick"}})).start()
        events = [json.loads(line) for line in response.iter_lines() if line]
    assert 1.9 < time.monotonic() - start < 10
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks and bookmarks[0]["object"]["kind"] == "Pod"
    assert int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) > 0


def test_paging_returns_every_object_once_at_one_revision(api, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    for i in range(7):
        api.request("POST", path, json={"metadata": {"name": f"c{i}"}})
    names, token, versions = [], "", set()
    while True:
        page = api.request("GET", f"{path}?limit=3&continue={token}").json()
        names += [c["metadata"]["name"] for c in page["items"]]
        versions.add(page["metadata"]["resourceVersion"])
        api.request("POST", path, json={"metadata": {"generateName": "late-"}})  # not in this list
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert names == [f"c{i}" for i in range(7)]
    assert len(versions) == 1
    garbage = api.request("GET", f"{path}?limit=3&continue=garbage")
    assert garbage.status_code == 400


def test_graceful_pod_deletion_waits_for_the_kubelet(api, ns):
    path = f"/api/v1/namespaces/{ns}/pods"
    api.request("POST", path, json=pod("g", node="n1"))
    response = api.request("DELETE", f"{path}/g")
    assert response.status_code == 202
    metadata = response.json()["metadata"]
    assert metadata["deletionGracePeriodSeconds"] == 30 and metadata["deletionTimestamp"]
    assert api.request("GET", f"{path}/g").status_code == 200
    assert api.request("DELETE", f"{path}/g?gracePeriodSeconds=0").status_code == 200  # the kubelet confirms
    assert api.request("GET", f"{path}/g").status_code == 404


def test_unscheduled_pod_goes_at_once(api, ns):
    path = f"/api/v1/namespaces/{ns}/pods"
    api.request("POST", path, json=pod("u"))
    assert api.request("DELETE", f"{path}/u").status_code == 200
    assert api.request("GET", f"{path}/u").status_code == 404


def test_finalizers_block_removal_until_cleared(api, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    api.request("POST", path, json={"metadata": {"name": "f", "finalizers": ["example.com/hold"]}})
    assert api.request("DELETE", f"{path}/f").status_code == 202
    held = api.request("GET", f"{path}/f").json()
    assert held["metadata"]["deletionTimestamp"]
    held["metadata"]["finalizers"] = []
    assert api.request("PUT", f"{path}/f", json=held).status_code == 200
    assert api.request("GET", f"{path}/f").status_code == 404


def test_propagation_policy_is_recorded_as_a_finalizer(api, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    api.request("POST", path, json={"metadata": {"name": "o"}})
    response = api.request("DELETE", f"{path}/o", json={"kind": "DeleteOptions", "apiVersion": "v1",
                                                         "propagationPolicy": "Orphan"})
    assert response.status_code == 202 and response.json()["metadata"]["finalizers"] == ["orphan"]
    bad = api.request("DELETE", f"{path}/o?propagationPolicy=Sometimes")
    assert bad.status_code == 422


def test_terminating_namespace_refuses_new_content(api, ns):
    assert api.request("DELETE", f"/api/v1/namespaces/{ns}").status_code == 202
    assert api.request("GET", f"/api/v1/namespaces/{ns}").json()["status"]["phase"] == "Terminating"
    response = api.request("POST", f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "late"}})
    assert response.status_code == 403 and "being terminated" in response.json()["message"]
    missing = api.request("POST", "/api/v1/namespaces/nowhere/configmaps", json={"metadata": {"name": "x"}})
    assert missing.status_code == 404


def test_resource_quota_on_create(api, ns):
    quota = {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "2"}}}
    assert api.request("POST", f"/api/v1/namespaces/{ns}/resourcequotas", json=quota).status_code == 201
    path = f"/api/v1/namespaces/{ns}/pods"
    assert api.request("POST", path, json=pod("q1")).status_code == 201
    assert api.request("POST", path, json=pod("q2")).status_code == 201
    refused = api.request("POST", path, json=pod("q3"))
    assert refused.status_code == 403
    assert "exceeded quota: q" in refused.json()["message"]
    api.request("DELETE", f"{path}/q1")
    assert api.request("POST", path, json=pod("q3")).status_code == 201


def test_service_allocation_and_release(api, ns):
    path = f"/api/v1/namespaces/{ns}/services"
    body = {"metadata": {"name": "np"}, "spec": {"type": "NodePort", "selector": {"a": "b"},
                                                 "ports": [{"port": 80, "targetPort": 8080}]}}
    created = api.request("POST", path, json=body).json()
    ip, node_port = created["spec"]["clusterIP"], created["spec"]["ports"][0]["nodePort"]
    assert ip.startswith("10.") and ip != "10.96.0.1" and 30000 <= node_port <= 32767
    taken = {"metadata": {"name": "dup"}, "spec": {"clusterIP": ip, "ports": [{"port": 80}]}}
    assert api.request("POST", path, json=taken).status_code == 422
    api.request("DELETE", f"{path}/np")
    assert api.request("POST", path, json=taken).status_code == 201  # freed on delete


def test_errors_are_status_objects(api, ns):
    cases = [
        ("POST", f"/api/v1/namespaces/{ns}/pods",
         {"data": b"{not json", "headers": {"Content-Type": "application/json"}}, 400),
        ("POST", f"/api/v1/namespaces/{ns}/pods", {"data": b"{}", "headers": {"Content-Type": "text/html"}}, 415),
        ("POST", f"/api/v1/namespaces/{ns}/pods", {"json": {"metadata": {"name": "x"}, "spec": {}}}, 422),
        ("GET", f"/api/v1/namespaces/{ns}/pods/none", {}, 404),
        ("PUT", f"/api/v1/namespaces/{ns}/pods", {"json": {}}, 405),
        ("POST", f"/api/v1/namespaces/{ns}/configmaps",
         {"data": b'{"data":{"a":"' + b"x" * (3 * 1024 * 1024) + b'"}}',
          "headers": {"Content-Type": "application/json"}},
         413),
    ]
    for method, path, kwargs, code in cases:
        response = api.request(method, path, **kwargs)
        assert response.status_code == code, (method, path, response.text[:300])
        body = response.json()
        assert body["kind"] == "Status" and body["code"] == code
    invalid = api.request("POST", f"/api/v1/namespaces/{ns}/pods", json={"metadata": {"name": "x"}, "spec": {}})
    assert invalid.json()["details"]["causes"][0]["field"] == "spec.containers"


def test_requests_without_the_token_are_refused(api):
    assert requests.get(api.url + "/api/v1/pods", timeout=10, verify=api.verify).status_code == 401
    assert requests.get(api.url + "/healthz", timeout=10, verify=api.verify).text == "ok"
    assert requests.get(api.url + "/readyz", timeout=10, verify=api.verify).status_code == 200


def test_scale_subresource_is_an_autoscaling_v1_scale(api, ns):
    deployment = {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    assert api.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", json=deployment).status_code == 201
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/d/scale"
    scale = api.request("GET", path).json()
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"]["replicas"] == 1 and scale["status"]["selector"] == "app=d"
    patched = api.request("PATCH", path, data=json.dumps({"spec": {"replicas": 4}}),
                          headers={"Content-Type": "application/merge-patch+json"})
    assert patched.status_code == 200 and patched.json()["spec"]["replicas"] == 4
    stored = api.request("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/d").json()
    assert stored["spec"]["replicas"] == 4 and stored["metadata"]["generation"] == 2


def test_binding_sets_the_node_once(api, ns):
    path = f"/api/v1/namespaces/{ns}/pods"
    api.request("POST", path, json=pod("b"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "b"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
    assert api.request("POST", f"{path}/b/binding", json=binding).status_code == 201
    bound = api.request("GET", f"{path}/b").json()
    assert bound["spec"]["nodeName"] == "n1"
    assert any(c["type"] == "PodScheduled" and c["status"] == "True" for c in bound["status"]["conditions"])
    assert api.request("POST", f"{path}/b/binding", json=binding).status_code == 409


def test_exec_answers_at_once_with_a_status(api, ns):
    api.request("POST", f"/api/v1/namespaces/{ns}/pods", json=pod("e", node="n1"))
    response = api.request("POST", f"/api/v1/namespaces/{ns}/pods/e/exec?command=ls", timeout=10)
    # the pod's Node does not exist: its NotFound, as upstream's node connection lookup answers
    assert response.status_code == 404 and response.json()["kind"] == "Status"
    assert response.json()["message"] == 'nodes "n1" not found'

