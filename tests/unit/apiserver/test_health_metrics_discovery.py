"""/healthz-/livez-/readyz answers (health.py), the request labels of the metrics (metrics.py) and the
aggregated discovery documents with their negotiation (aggregated_discovery.py)."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import generate_latest

from control.apiserver.endpoints import aggregated_discovery, health, metrics
from control.apiserver.resources import ServedResources, by_path
from control.storage.sqlite import SQLiteStorage


def test_render_verbose_passed_and_failed_as_upstream() -> None:
    results = [("ping", None), ("log", None), ("etcd", None)]
    assert health.render("readyz", results, verbose=False) == health.Answer(200, "ok")
    assert health.render("readyz", results, verbose=True) == health.Answer(
        200, "[+]ping ok\n[+]log ok\n[+]etcd ok\nreadyz check passed\n")
    failed = health.render("livez", [("ping", None), ("etcd", "connection refused")], verbose=False)
    assert failed == health.Answer(500, "[+]ping ok\n[-]etcd failed: reason withheld\nlivez check failed\n")
    assert health.render("healthz", [("ping", None)], verbose=True, unmatched_excludes=["nope"]).text == (
        '[+]ping ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nhealthz check passed\n')
    assert health.render_one("timeout") == health.Answer(500, "internal server error: timeout\n")


def test_checks_run_in_order_with_excludes_and_one_by_one() -> None:
    async def ok() -> str | None:
        return None

    async def down() -> str | None:
        return "down"

    checks = health.HealthChecks("readyz", [("ping", ok), ("etcd", down), ("shutdown", ok)])
    assert asyncio.run(checks.run(verbose=True, exclude=["etcd"])).text == \
        "[+]ping ok\n[+]shutdown ok\nreadyz check passed\n"
    assert asyncio.run(checks.run(verbose=False)).code == 500
    assert asyncio.run(checks.run_one("etcd")) == health.Answer(500, "internal server error: down\n")
    assert asyncio.run(checks.run_one("nothing")) is None


@pytest.mark.parametrize(("method", "path", "query", "content_type", "verb", "scope", "labels"), [
    pytest.param("GET", "/api/v1/namespaces/default/pods", {}, "", "LIST", "namespace", ("", "v1", "pods", ""),
                 id="list-namespace"),
    pytest.param("GET", "/api/v1/pods", {"watch": "true"}, "", "WATCH", "cluster", ("", "v1", "pods", ""),
                 id="watch-cluster"),
    pytest.param("GET", "/apis/apps/v1/namespaces/ns/deployments/web", {}, "", "GET", "resource",
                 ("apps", "v1", "deployments", ""), id="get"),
    pytest.param("POST", "/apis/apps/v1/namespaces/ns/deployments", {}, "application/json", "POST", "resource",
                 ("apps", "v1", "deployments", ""), id="create-is-resource-scoped"),
    pytest.param("PUT", "/apis/apps/v1/namespaces/ns/deployments/web/status", {}, "", "PUT", "resource",
                 ("apps", "v1", "deployments", "status"), id="status"),
    pytest.param("PATCH", "/api/v1/nodes/n1", {}, "application/apply-patch+yaml", "APPLY", "resource",
                 ("", "v1", "nodes", ""), id="apply"),
    pytest.param("DELETE", "/api/v1/namespaces/ns/configmaps", {}, "", "DELETECOLLECTION", "namespace",
                 ("", "v1", "configmaps", ""), id="deletecollection"),
    pytest.param("POST", "/api/v1/namespaces/ns/pods/p/exec", {}, "", "CONNECT", "resource",
                 ("", "v1", "pods", "exec"), id="connect"),
    pytest.param("GET", "/api/v1/namespaces/kube-system", {}, "", "GET", "resource",
                 ("", "v1", "namespaces", ""), id="a-namespace"),
])
def test_request_labels(method, path, query, content_type, verb, scope, labels) -> None:
    info = metrics.parse_path(path)
    assert metrics.clean_verb(method, info, query, content_type) == verb
    assert metrics.clean_scope(method, info) == scope
    assert (info.group, info.version, info.resource, info.subresource) == labels


def test_request_metrics_under_upstream_names(tmp_path) -> None:
    m = metrics.APIServerMetrics()
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        metered = metrics.MeteredStorage(storage, m.storage_latency)
        metered.create("/registry/deployments/ns/web", b"{}")
        metered.get("/registry/deployments/ns/web")
        m.count_storage_objects(metered.count, [by_path("apps", "v1", "deployments"), by_path("", "v1", "pods")])
        m.observe_request(method="GET", path="/api/v1/namespaces/ns/pods", query={}, content_type="", code=200,
                          seconds=0.03, route="/api/v1/{tail}")
        m.observe_request(method="GET", path="/readyz", query={}, content_type="", code=200, seconds=0.001,
                          route="/readyz")
        text = generate_latest(m.registry).decode()
    finally:
        storage.close()
    assert ('apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="namespace",subresource="",verb="LIST",version="v1"} 1.0') in text
    assert ('apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",'
            'subresource="/readyz",verb="GET",version=""} 1.0') in text
    assert ('apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",le="0.05",'
            'resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 1.0') in text
    assert 'le="0.025",resource="pods"' in text and 'le="45.0"' in text  # upstream's buckets
    assert 'apiserver_storage_objects{resource="deployments.apps"} 1.0' in text
    assert 'apiserver_storage_objects{resource="pods"} 0.0' in text
    assert 'etcd_request_duration_seconds_count{operation="create",type="deployments.apps"} 1.0' in text
    assert 'etcd_request_duration_seconds_count{operation="get",type="deployments.apps"} 1.0' in text
    assert 'apiserver_current_inflight_requests{request_kind="mutating"} 0.0' in text


@pytest.mark.parametrize(("accept", "version"), [
    pytest.param("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;"
                 "g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", "v2", id="kubectl-1.30"),
    pytest.param("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
                 "v2beta1", id="kubectl-1.27"),
    pytest.param("application/json, */*", None, id="legacy"),
    pytest.param(None, None, id="none"),
    pytest.param("application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", None,
                 id="protobuf-only"),
])
def test_negotiation(accept, version) -> None:
    assert aggregated_discovery.negotiate(accept) == version


def test_aggregated_documents() -> None:
    core = aggregated_discovery.discovery_list(ServedResources(), core=True, version="v2")
    assert (core["kind"], core["apiVersion"]) == ("APIGroupDiscoveryList", "apidiscovery.k8s.io/v2")
    (group,) = core["items"]
    assert group["metadata"] == {"creationTimestamp": None}
    (v1,) = group["versions"]
    assert v1["version"] == "v1" and v1["freshness"] == "Current"
    pods = next(r for r in v1["resources"] if r["resource"] == "pods")
    assert list(pods) == ["resource", "responseKind", "scope", "singularResource", "verbs", "shortNames",
                          "categories", "subresources"]
    assert pods["responseKind"] == {"group": "", "version": "v1", "kind": "Pod"} and pods["scope"] == "Namespaced"
    eviction = next(s for s in pods["subresources"] if s["subresource"] == "eviction")
    assert eviction == {"subresource": "eviction", "responseKind": {"group": "policy", "version": "v1",
                                                                    "kind": "Eviction"}, "verbs": ["create"]}
    named = aggregated_discovery.discovery_list(ServedResources(), core=False, version="v2beta1")
    assert named["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    apps = next(g for g in named["items"] if g["metadata"].get("name") == "apps")
    deployments = next(r for r in apps["versions"][0]["resources"] if r["resource"] == "deployments")
    scale = next(s for s in deployments["subresources"] if s["subresource"] == "scale")
    assert scale["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    names = {g["metadata"]["name"] for g in named["items"]}
    assert {"networking.k8s.io", "certificates.k8s.io", "metrics.k8s.io"} <= names and "" not in names
    csr = next(g for g in named["items"] if g["metadata"]["name"] == "certificates.k8s.io")
    assert csr["versions"][0]["resources"][0]["scope"] == "Cluster"
