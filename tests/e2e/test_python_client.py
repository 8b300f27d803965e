"""The official `kubernetes` Python client against a real API server, used as a user would: typed
CoreV1Api/AppsV1Api calls, selectors, patches, conflicts, paging, watches and service allocation.

Each test gets its own `ApiClient` from the server's kubeconfig (`new_client_from_config`), so no test
touches the client library's global configuration."""

from __future__ import annotations

import ipaddress
import json
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client, config, watch  # the `test` extra installs it
from kubernetes.client.rest import ApiException

from tests.support.apiserver import Endpoint

SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")


@pytest.fixture
def api_client(apiserver: Endpoint) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=apiserver.kubeconfig)
    try:
        yield api
    finally:
        api.close()


@pytest.fixture
def v1(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture
def apps(api_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api_client)


@pytest.fixture
def ns(v1: client.CoreV1Api) -> str:
    name = f"py-{uuid.uuid4().hex[:8]}"
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


def pod(name: str, labels: dict[str, str] | None = None) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox:1")]))


def service(name: str, *, node_port: bool = False, cluster_ip: str | None = None,
            port_number: int | None = None) -> client.V1Service:
    port = client.V1ServicePort(port=80, target_port=8080, protocol="TCP", node_port=port_number)
    return client.V1Service(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1ServiceSpec(type="NodePort" if node_port else "ClusterIP", selector={"app": name},
                                  ports=[port], cluster_ip=cluster_ip))


def status_of(error: ApiException) -> dict:
    """The Status body of a failed call, as a dict."""
    body = json.loads(error.body)
    assert body["kind"] == "Status" and body["code"] == error.status, body
    return body


def names(items) -> list[str]:
    return sorted(item.metadata.name for item in items)


def test_list_namespaces_has_the_system_namespaces(v1):
    listed = set(names(v1.list_namespace().items))
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= listed


def test_create_and_read_namespace(v1):
    name = f"py-{uuid.uuid4().hex[:8]}"
    created = v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    assert created.metadata.name == name and created.metadata.uid
    assert v1.read_namespace(name).status.phase == "Active"
    assert name in names(v1.list_namespace().items)


def test_pods_create_read_list_with_selectors(v1, ns):
    v1.create_namespaced_pod(ns, pod("web-1", {"app": "web", "tier": "front"}))
    v1.create_namespaced_pod(ns, pod("web-2", {"app": "web"}))
    v1.create_namespaced_pod(ns, pod("db-1", {"app": "db"}))

    read = v1.read_namespaced_pod("web-1", ns)
    assert read.metadata.labels == {"app": "web", "tier": "front"}
    assert read.status.phase == "Pending"
    assert read.spec.containers[0].image_pull_policy == "IfNotPresent"

    assert names(v1.list_namespaced_pod(ns).items) == ["db-1", "web-1", "web-2"]
    assert names(v1.list_namespaced_pod(ns, label_selector="app=web").items) == ["web-1", "web-2"]
    assert names(v1.list_namespaced_pod(ns, label_selector="app in (web),tier").items) == ["web-1"]
    assert names(v1.list_namespaced_pod(ns, label_selector="app!=web").items) == ["db-1"]
    assert names(v1.list_namespaced_pod(ns, field_selector="status.phase=Pending").items) == [
        "db-1", "web-1", "web-2"]
    assert v1.list_namespaced_pod(ns, field_selector="status.phase=Running").items == []
    assert names(v1.list_namespaced_pod(ns, field_selector="metadata.name=web-2").items) == ["web-2"]
    assert names(v1.list_namespaced_pod(ns, label_selector="app=web",
                                        field_selector="metadata.name!=web-1").items) == ["web-2"]
    everywhere = v1.list_pod_for_all_namespaces(field_selector=f"metadata.namespace={ns}")
    assert names(everywhere.items) == ["db-1", "web-1", "web-2"]


def test_bad_selector_is_400(v1, ns):
    with pytest.raises(ApiException) as caught:
        v1.list_namespaced_pod(ns, field_selector="spec.unknownField=x")
    assert caught.value.status == 400


def test_patch_pod_labels_strategic_merge(v1, ns):
    v1.create_namespaced_pod(ns, pod("p", {"app": "web", "keep": "yes"}))
    patched = v1.patch_namespaced_pod("p", ns, {"metadata": {"labels": {"app": "api", "new": "1"}}})
    assert patched.metadata.labels == {"app": "api", "keep": "yes", "new": "1"}
    # null removes a key in a strategic merge patch
    patched = v1.patch_namespaced_pod("p", ns, {"metadata": {"labels": {"keep": None}}})
    assert patched.metadata.labels == {"app": "api", "new": "1"}
    assert names(v1.list_namespaced_pod(ns, label_selector="app=api").items) == ["p"]


def test_scale_deployment_through_the_scale_subresource(apps, ns):
    deployment = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1DeploymentSpec(
            replicas=1, selector=client.V1LabelSelector(match_labels={"app": "web"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "web"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx:1")]))))
    apps.create_namespaced_deployment(ns, deployment)
    scale = apps.read_namespaced_deployment_scale("web", ns)
    assert scale.spec.replicas == 1 and scale.status.selector == "app=web"

    scaled = apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 4}})
    assert scaled.spec.replicas == 4
    assert apps.read_namespaced_deployment("web", ns).spec.replicas == 4

    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": -1}})
    assert caught.value.status == 422
    assert apps.read_namespaced_deployment("web", ns).spec.replicas == 4


def test_replace_with_stale_resource_version_is_409_conflict(v1, ns):
    created = v1.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="cfg"), data={"a": "1"}))
    created.data = {"a": "2"}
    updated = v1.replace_namespaced_config_map("cfg", ns, created)
    assert updated.data == {"a": "2"}
    assert updated.metadata.resource_version != created.metadata.resource_version

    created.data = {"a": "3"}  # still the first resourceVersion
    with pytest.raises(ApiException) as caught:
        v1.replace_namespaced_config_map("cfg", ns, created)
    assert caught.value.status == 409 and status_of(caught.value)["reason"] == "Conflict"
    assert v1.read_namespaced_config_map("cfg", ns).data == {"a": "2"}


def test_duplicate_create_is_409_already_exists(v1, ns):
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dup"), data={"a": "1"})
    v1.create_namespaced_config_map(ns, body)
    with pytest.raises(ApiException) as caught:
        v1.create_namespaced_config_map(ns, body)
    assert caught.value.status == 409 and caught.value.reason
    status = status_of(caught.value)
    assert status["reason"] == "AlreadyExists" and status["details"]["name"] == "dup"


def test_invalid_object_is_422_with_causes(v1, ns):
    bad = client.V1Pod(metadata=client.V1ObjectMeta(name="Not_A_Valid_Name"),
                       spec=client.V1PodSpec(containers=[]))
    with pytest.raises(ApiException) as caught:
        v1.create_namespaced_pod(ns, bad)
    assert caught.value.status == 422
    status = status_of(caught.value)
    assert status["reason"] == "Invalid"
    fields = {cause.get("field") for cause in status["details"]["causes"]}
    assert "metadata.name" in fields and any(f.startswith("spec.containers") for f in fields)
    assert v1.list_namespaced_pod(ns).items == []


def test_delete_with_background_propagation(v1, ns):
    v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="gone")))
    v1.delete_namespaced_config_map("gone", ns, propagation_policy="Background")
    with pytest.raises(ApiException) as caught:
        v1.read_namespaced_config_map("gone", ns)
    assert caught.value.status == 404

    v1.create_namespaced_pod(ns, pod("p"))
    v1.delete_namespaced_pod("p", ns, propagation_policy="Background")
    deadline = time.monotonic() + 10
    while v1.list_namespaced_pod(ns).items and time.monotonic() < deadline:
        time.sleep(0.1)  # a pod that never reached a node goes at once
    assert v1.list_namespaced_pod(ns).items == []


def test_watch_sees_added_modified_deleted_from_another_thread(v1, ns):
    def writer() -> None:
        time.sleep(0.5)
        v1.create_namespaced_pod(ns, pod("w", {"step": "1"}))
        v1.patch_namespaced_pod("w", ns, {"metadata": {"labels": {"step": "2"}}})
        v1.delete_namespaced_pod("w", ns, grace_period_seconds=0)

    thread = threading.Thread(target=writer)
    seen: list[tuple[str, str, str | None]] = []
    w = watch.Watch()
    thread.start()
    try:
        for event in w.stream(v1.list_namespaced_pod, ns, timeout_seconds=5):
            obj = event["object"]
            seen.append((event["type"], obj.metadata.name, (obj.metadata.labels or {}).get("step")))
            if event["type"] == "DELETED":
                w.stop()
    finally:
        thread.join(timeout=10)
    types = [t for t, _, _ in seen]
    assert types[0] == "ADDED" and "MODIFIED" in types and types[-1] == "DELETED", seen
    assert ("MODIFIED", "w", "2") in seen
    assert all(name == "w" for _, name, _ in seen)


def test_watch_from_list_resource_version_sees_only_later_events(v1, ns):
    v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="before")))
    listed = v1.list_namespaced_config_map(ns)
    assert names(listed.items) == ["before"]
    v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="after")))

    w = watch.Watch()
    seen = []
    for event in w.stream(v1.list_namespaced_config_map, ns, resource_version=listed.metadata.resource_version,
                          timeout_seconds=2):
        seen.append((event["type"], event["object"].metadata.name))
        w.stop()
    assert seen == [("ADDED", "after")]


def test_paging_with_limit_and_continue_returns_each_object_once(v1, ns):
    expected = [f"cm-{i:02d}" for i in range(7)]
    for name in expected:
        v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name)))
    collected: list[str] = []
    token = None
    pages = 0
    while True:
        page = v1.list_namespaced_config_map(ns, limit=2, _continue=token)
        assert len(page.items) <= 2
        collected += [item.metadata.name for item in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
        # a change during paging does not disturb the snapshot being paged through
        if pages == 1:
            v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="zz-late")))
    assert sorted(collected) == expected and len(collected) == len(set(collected))
    assert pages == 4


def test_services_get_cluster_ips_and_unique_node_ports(v1, ns):
    cluster = v1.create_namespaced_service(ns, service("plain"))
    assert ipaddress.ip_address(cluster.spec.cluster_ip) in SERVICE_CIDR
    assert cluster.spec.ports[0].node_port is None

    created = [v1.create_namespaced_service(ns, service(f"np-{i:02d}", node_port=True)) for i in range(20)]
    ports = [s.spec.ports[0].node_port for s in created]
    ips = [s.spec.cluster_ip for s in created] + [cluster.spec.cluster_ip]
    assert all(30000 <= p <= 32767 for p in ports), ports
    assert len(set(ports)) == 20, ports
    assert len(set(ips)) == 21 and all(ipaddress.ip_address(ip) in SERVICE_CIDR for ip in ips)

    # asking for a port or IP in use is refused
    with pytest.raises(ApiException) as caught:
        v1.create_namespaced_service(ns, service("taken", node_port=True, port_number=ports[0]))
    assert caught.value.status == 422
    with pytest.raises(ApiException) as caught:
        v1.create_namespaced_service(ns, service("taken", cluster_ip=ips[0]))
    assert caught.value.status == 422

    # deleting frees both: the same port and IP can be had again
    for s in created:
        v1.delete_namespaced_service(s.metadata.name, ns)
    again = v1.create_namespaced_service(ns, service("again", node_port=True, port_number=ports[0],
                                                     cluster_ip=ips[0]))
    assert again.spec.ports[0].node_port == ports[0] and again.spec.cluster_ip == ips[0]
    recreated = [v1.create_namespaced_service(ns, service(f"re-{i:02d}", node_port=True)) for i in range(20)]
    new_ports = [s.spec.ports[0].node_port for s in recreated] + [ports[0]]
    assert len(set(new_ports)) == 21


def test_pod_log_without_a_node_is_400(v1, ns):
    v1.create_namespaced_pod(ns, pod("unscheduled"))
    with pytest.raises(ApiException) as caught:
        v1.read_namespaced_pod_log("unscheduled", ns)
    assert caught.value.status == 400
    assert "does not have a host assigned" in caught.value.body


def test_missing_object_is_404(v1, ns):
    with pytest.raises(ApiException) as caught:
        v1.read_namespaced_pod("nope", ns)
    assert caught.value.status == 404


def test_replica_sets_and_replication_controllers_are_created_and_read_as_typed_objects(apps, v1, ns):
    """The client deserialises every answer into its models, which require status.replicas (a Go field
    without omitempty): create, read, list and a watch of each kind must not raise."""
    labels = {"app": "typed"}
    template = client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels=labels),
                                        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="i")]))
    created_rs = apps.create_namespaced_replica_set(ns, client.V1ReplicaSet(
        metadata=client.V1ObjectMeta(name="rs"),
        spec=client.V1ReplicaSetSpec(replicas=2, selector=client.V1LabelSelector(match_labels=labels),
                                     template=template)))
    created_rc = v1.create_namespaced_replication_controller(ns, client.V1ReplicationController(
        metadata=client.V1ObjectMeta(name="rc"),
        spec=client.V1ReplicationControllerSpec(replicas=2, selector=labels, template=template)))
    assert created_rs.status.replicas == 0 and created_rc.status.replicas == 0
    assert apps.read_namespaced_replica_set("rs", ns).spec.replicas == 2
    assert v1.read_namespaced_replication_controller("rc", ns).status.replicas == 0
    assert apps.read_namespaced_replica_set_status("rs", ns).status.replicas == 0
    assert names(apps.list_namespaced_replica_set(ns).items) == ["rs"]
    assert names(v1.list_namespaced_replication_controller(ns).items) == ["rc"]
    for lister in (apps.list_namespaced_replica_set, v1.list_namespaced_replication_controller):
        events = list(watch.Watch().stream(lister, ns, timeout_seconds=1))
        assert [(e["type"], e["object"].status.replicas) for e in events] == [("ADDED", 0)]
