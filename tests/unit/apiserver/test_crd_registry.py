"""CRDs through the generic store and the CRD controller, over a real SQLite store, without HTTP: serving
appears and disappears with the CRD, custom objects are defaulted, pruned, validated, stored at the
storage version under `/registry/{group}/{plural}/`, status and scale behave as upstream, and deleting a
CRD deletes its objects."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from control.apiserver import resources
from control.apiserver.crd.controller import CRDS, CRDController
from control.apiserver.crd.strategies import CustomResourceStrategy
from control.apiserver.endpoints import discovery
from control.apiserver.registry.store import DeleteOptions, Registry
from control.apiserver.resources import by_kind, by_path
from control.apiserver.status import APIError
from control.storage.sqlite import SQLiteStorage
from tests.support.crd_objects import widget, widget_crd

NAMESPACES = by_path("", "v1", "namespaces")


@pytest.fixture
def store(tmp_path) -> Iterator[tuple[Registry, CRDController]]:
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    registry = Registry(storage)
    controller = CRDController(registry)
    registry.create(NAMESPACES, "", {"metadata": {"name": "ns"}})
    try:
        yield registry, controller
    finally:
        controller.stop()
        storage.close()


def establish(registry: Registry, controller: CRDController, crd: dict | None = None) -> dict:
    registry.create(CRDS, "", crd or widget_crd())
    assert controller.sync_all() is False
    return registry.must_get(CRDS, "", (crd or widget_crd())["metadata"]["name"])


def test_an_established_crd_is_served_and_its_removal_takes_it_away(store):
    registry, controller = store
    assert registry.resources.by_path("example.com", "v1", "widgets") is None
    crd = establish(registry, controller)
    assert {c["type"]: c["status"] for c in crd["status"]["conditions"]} == {"NamesAccepted": "True",
                                                                              "Established": "True"}
    v1 = registry.resources.by_path("example.com", "v1", "widgets")
    assert v1 is not None and v1.custom and registry.resources.by_kind("example.com/v1beta1", "Widget") is not None
    assert ("example.com", "v1") in registry.resources.group_versions()
    assert discovery.api_group(registry.resources, "example.com")["preferredVersion"] == {
        "groupVersion": "example.com/v1", "version": "v1"}
    entries = {e["name"]: e for e in discovery.api_resource_list(registry.resources, "example.com", "v1")["resources"]}
    assert entries["widgets"]["shortNames"] == ["wd"] and entries["widgets"]["categories"] == ["all"]
    assert entries["widgets/scale"]["group"] == "autoscaling" and "widgets/status" in entries
    registry.delete(CRDS, "", "widgets.example.com", DeleteOptions())
    assert controller.sync_all() is False
    assert registry.get(CRDS, "", "widgets.example.com") is None
    assert registry.resources.by_path("example.com", "v1", "widgets") is None
    assert discovery.api_group(registry.resources, "example.com") is None


def test_custom_objects_are_defaulted_pruned_and_stored_at_the_storage_version(store):
    registry, controller = store
    establish(registry, controller)
    v1 = registry.resources.by_path("example.com", "v1", "widgets")
    v1beta1 = registry.resources.by_path("example.com", "v1beta1", "widgets")
    body = widget("w", api_version="example.com/v1beta1", size="small", unknown=1)
    created = registry.create(v1beta1, "ns", body)
    assert created["apiVersion"] == "example.com/v1beta1"  # v1beta1 preserves unknown fields
    assert created["spec"] == {"size": "small", "unknown": 1}
    record = registry.storage.get("/registry/example.com/widgets/ns/w")
    assert record is not None and b'"apiVersion":"example.com/v1"' in record.value
    read = registry.must_get(v1, "ns", "w")  # read at v1: v1's defaults applied and unknown fields pruned
    assert read["apiVersion"] == "example.com/v1"
    assert read["spec"] == {"size": "small", "replicas": 1, "maxReplicas": 10, "color": "blue"}
    fresh = registry.create(v1, "ns", widget("x", size="large", junk=True))
    assert fresh["spec"] == {"size": "large", "replicas": 1, "maxReplicas": 10, "color": "blue"}
    assert fresh["metadata"]["generation"] == 1


@pytest.mark.parametrize(("spec", "message"), [
    ({"size": "huge"}, 'Widget.example.com "w" is invalid: spec.size: Unsupported value: "huge": supported values: '
                       '"small", "large"'),
    ({"size": "small", "replicas": 11},
     'Widget.example.com "w" is invalid: spec: Invalid value: "object": replicas must not exceed maxReplicas'),
    ({"size": "small", "replicas": -1, "color": "X"},
     'Widget.example.com "w" is invalid: [spec.replicas: Invalid value: -1: spec.replicas in body should be greater '
     "than or equal to 0, spec.color: Invalid value: \"X\": spec.color in body should match '^[a-z]+$']"),
])
def test_invalid_custom_objects_are_refused_with_upstreams_message(store, spec, message):
    registry, controller = store
    establish(registry, controller)
    with pytest.raises(APIError) as caught:
        registry.create(registry.resources.by_path("example.com", "v1", "widgets"), "ns", widget("w", **spec))
    assert caught.value.code == 422
    assert caught.value.status["message"] == message
    assert caught.value.status["details"]["group"] == "example.com"


def test_status_subresource_and_generation(store):
    registry, controller = store
    establish(registry, controller)
    v1 = registry.resources.by_path("example.com", "v1", "widgets")
    created = registry.create(v1, "ns", {**widget("w", size="small"), "status": {"replicas": 9}})
    assert "status" not in created  # dropped on create
    status_write, _ = registry.update(v1, "ns", "w", {**created, "spec": {"size": "large"},
                                                      "status": {"replicas": 2}}, subresource="status")
    assert status_write["spec"]["size"] == "small" and status_write["status"] == {"replicas": 2}
    assert status_write["metadata"]["generation"] == 1
    main_write, _ = registry.update(v1, "ns", "w", {**status_write, "spec": {**status_write["spec"], "size": "large"},
                                                    "status": {"replicas": 7}})
    assert main_write["spec"]["size"] == "large" and main_write["status"] == {"replicas": 2}
    assert main_write["metadata"]["generation"] == 2
    labelled = registry.patch(v1, "ns", "w", "merge", {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 2


def test_scale_subresource_reads_and_writes_the_replica_paths(store):
    registry, controller = store
    establish(registry, controller)
    v1 = registry.resources.by_path("example.com", "v1", "widgets")
    registry.create(v1, "ns", widget("w", size="small", replicas=2))
    registry.patch(v1, "ns", "w", "merge", {"status": {"replicas": 2, "selector": "app=w"}}, subresource="status")
    strategy = registry.strategy(v1)
    assert isinstance(strategy, CustomResourceStrategy)
    scaled = registry.patch(v1, "ns", "w", "merge", {"spec": {"replicas": 5}}, transform=strategy.scale_of,
                            apply_back=strategy.apply_scale)
    scale = strategy.scale_of(scaled)
    assert scale["spec"] == {"replicas": 5} and scale["status"] == {"replicas": 2, "selector": "app=w"}
    assert scale["apiVersion"] == "autoscaling/v1" and scaled["metadata"]["generation"] == 2
    with pytest.raises(APIError) as caught:  # the CEL rule still guards the object
        registry.patch(v1, "ns", "w", "merge", {"spec": {"replicas": 50}}, transform=strategy.scale_of,
                       apply_back=strategy.apply_scale)
    assert caught.value.code == 422


def test_deleting_a_crd_deletes_its_objects_first(store):
    registry, controller = store
    establish(registry, controller)
    cluster = widget_crd(scope="Cluster", group="other.io", plural="pods", kind="Pod", short_names=())
    establish(registry, controller, cluster)
    v1 = registry.resources.by_path("example.com", "v1", "widgets")
    for name in ("a", "b"):
        registry.create(v1, "ns", widget(name, size="small"))
    finalized = widget("held", size="small")
    finalized["metadata"]["finalizers"] = ["example.com/hold"]
    registry.create(v1, "ns", finalized)
    custom_pods = registry.resources.by_path("other.io", "v1", "pods")
    registry.create(custom_pods, "", {"metadata": {"name": "cp"}, "spec": {"size": "small"}})
    assert registry.storage.get("/registry/other.io/pods/cp") is not None  # no clash with core pods' keys
    marked, removed = registry.delete(CRDS, "", "widgets.example.com", DeleteOptions())
    assert not removed and marked["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    assert controller.sync_all() is True  # "held" waits for its finalizer
    crd = registry.must_get(CRDS, "", "widgets.example.com")
    terminating = next(c for c in crd["status"]["conditions"] if c["type"] == "Terminating")
    assert terminating["status"] == "True"
    assert [o["metadata"]["name"] for o in registry.list_all(v1, "")] == ["held"]
    with pytest.raises(APIError) as caught:
        registry.create(v1, "ns", widget("late", size="small"))
    assert (caught.value.code, caught.value.status["message"]) == (
        405, "create not allowed while custom resource definition is terminating")
    registry.patch(v1, "ns", "held", "merge", {"metadata": {"finalizers": None}})
    assert controller.sync_all() is False
    assert registry.get(CRDS, "", "widgets.example.com") is None
    assert registry.resources.by_path("example.com", "v1", "widgets") is None
    assert registry.storage.list("/registry/example.com/").records == []
    assert registry.must_get(custom_pods, "", "cp")["kind"] == "Pod"  # the other CRD is untouched


def test_a_conflicting_crd_is_not_served_until_the_name_is_free(store):
    registry, controller = store
    establish(registry, controller)
    gadgets = widget_crd(plural="gadgets", kind="Gadget")  # short name "wd" is taken
    crd = establish(registry, controller, gadgets)
    assert not any(c["type"] == "Established" and c["status"] == "True" for c in crd["status"]["conditions"])
    assert registry.resources.by_path("example.com", "v1", "gadgets") is None
    registry.delete(CRDS, "", "widgets.example.com", DeleteOptions())
    assert controller.sync_all() is False
    assert controller.sync_all() is False
    assert registry.resources.by_path("example.com", "v1", "gadgets") is not None


def test_stop_forgets_everything_this_registry_served(store):
    registry, controller = store
    establish(registry, controller)
    controller.stop()
    assert registry.resources.by_path("example.com", "v1", "widgets") is None
    with pytest.raises(APIError):
        registry.strategy(resources.Resource("example.com", "v1", "widgets", "widget", "Widget", True, custom=True))


class RecordingPublisher:
    """The OpenAPI documents' hook, recorded (control/apiserver/crd/controller.py SchemaPublisher)."""

    def __init__(self) -> None:
        self.published: dict[tuple[str, str, str], dict] = {}

    def add_custom(self, group, version, kind, schema, *, plural, namespaced, list_kind=""):
        self.published[(group, version, kind)] = {"schema": schema, "plural": plural, "namespaced": namespaced,
                                                  "list_kind": list_kind}

    def remove_custom(self, group, version, kind):
        del self.published[(group, version, kind)]


def test_served_versions_are_published_and_withdrawn(store):
    registry, _ = store
    publisher = RecordingPublisher()
    controller = CRDController(registry, schemas=publisher)
    establish(registry, controller)
    assert set(publisher.published) == {("example.com", "v1", "Widget"), ("example.com", "v1beta1", "Widget")}
    v1 = publisher.published[("example.com", "v1", "Widget")]
    assert v1["plural"] == "widgets" and v1["namespaced"] and v1["list_kind"] == "WidgetList"
    assert v1["schema"]["properties"]["spec"]["required"] == ["size"]
    crd = registry.must_get(CRDS, "", "widgets.example.com")
    crd["spec"]["versions"][1]["served"] = False
    registry.update(CRDS, "", "widgets.example.com", crd)
    controller.sync_all()
    assert set(publisher.published) == {("example.com", "v1", "Widget")}
    assert registry.resources.by_path("example.com", "v1beta1", "widgets") is None
    registry.delete(CRDS, "", "widgets.example.com", DeleteOptions())
    controller.sync_all()
    assert publisher.published == {}


def test_openapi_documents_with_the_crd_kind_and_a_published_custom_kind():
    """JSONSchemaProps (the CRD kind's schema) has a property named `$ref`: v2 JSON and protobuf and every v3
    document must still build, and the custom kind gets its own v3 document."""
    import json

    from control.apiserver.openapi import spec as openapi

    documents = openapi.OpenAPIDocuments()
    documents.add_custom("example.com", "v1", "Widget", widget_crd()["spec"]["versions"][0]["schema"][
        "openAPIV3Schema"], plural="widgets", namespaced=True)
    assert documents.v2_protobuf() and documents.v2_json()
    for path in documents.v3_index()["paths"]:
        assert documents.v3(path) is not None
    crd_doc = json.loads(documents.v3("apis/apiextensions.k8s.io/v1")[0])
    props = crd_doc["components"]["schemas"]["io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"]
    assert "$ref" in props["properties"]
    widget_doc = json.loads(documents.v3("apis/example.com/v1")[0])
    assert widget_doc["components"]["schemas"]["com.example.v1.Widget"]["properties"]["spec"]["required"] == ["size"]


def test_served_custom_group_versions_get_local_api_services(store):
    registry, controller = store
    api_services = by_path("apiregistration.k8s.io", "v1", "apiservices")
    establish(registry, controller)
    service = registry.must_get(api_services, "", "v1.example.com")
    assert service["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "true"}
    assert service["spec"] == {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000,
                               "versionPriority": 100}
    assert service["status"]["conditions"][0]["reason"] == "Local"
    assert registry.get(api_services, "", "v1beta1.example.com") is not None
    registry.delete(CRDS, "", "widgets.example.com", DeleteOptions())
    controller.sync_all()
    assert registry.get(api_services, "", "v1.example.com") is None
    assert registry.get(api_services, "", "v1beta1.example.com") is None


def test_two_servers_in_one_process_serve_only_their_own_custom_resources(store, tmp_path):
    """The served-resource table is the registry's: a CRD one server serves is unknown to another (and
    to the module's static lookups) in the same process."""
    registry, controller = store
    other_storage = SQLiteStorage(str(tmp_path / "other.db"))
    try:
        other = Registry(other_storage)
        establish(registry, controller)
        assert registry.resources.by_path("example.com", "v1", "widgets") is not None
        assert other.resources.by_path("example.com", "v1", "widgets") is None
        assert other.resources.by_kind("example.com/v1", "Widget") is None
        assert ("example.com", "v1") not in other.resources.group_versions()
        assert discovery.api_group(other.resources, "example.com") is None
        assert by_path("example.com", "v1", "widgets") is None and by_kind("example.com/v1", "Widget") is None
    finally:
        other_storage.close()
