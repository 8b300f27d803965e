"""The OpenAPI documents: built from the resource table and upstream's data, the v2 protobuf as gnostic's
Document (read back here the way kubectl 1.20 reads it), v3 per group-version, and custom kinds."""

from __future__ import annotations

import json
import struct

import pytest

from control.apiserver import resources
from control.apiserver.openapi import gnostic
from control.apiserver.openapi import spec as openapi
from control.apiserver.resources import Resource, SubResource
from control.util.version import KUBERNETES_VERSION

DOCUMENTS = openapi.OpenAPIDocuments()


def fields(data: bytes) -> dict[int, list[int | bytes]]:
    out: dict[int, list[int | bytes]] = {}
    for number, value in gnostic.decode_fields(data):
        out.setdefault(number, []).append(value)
    return out


def named(data: bytes, number: int) -> dict[str, bytes]:
    """A gnostic map (repeated Named<T> {name 1; value 2}) under field `number` of `data`."""
    return {fields(entry)[1][0].decode(): fields(entry).get(2, [b""])[0] for entry in fields(data).get(number, [])}


# -- the wire format ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "encoded"),
    [pytest.param(0, b"\x00", id="zero"), pytest.param(1, b"\x01", id="one"),
     pytest.param(127, b"\x7f", id="one-byte-max"), pytest.param(128, b"\x80\x01", id="two-bytes"),
     pytest.param(300, b"\xac\x02", id="protobuf-docs-example"),
     pytest.param(2**32, b"\x80\x80\x80\x80\x10", id="five-bytes")],
)
def test_varint(value, encoded):
    assert gnostic.encode_varint(value) == encoded
    assert gnostic.decode_fields(b"\x08" + encoded) == [(1, value)]  # field 1, wire type 0


@pytest.mark.parametrize(
    "data",
    [pytest.param(b"\x0a\x05ab", id="truncated-string"), pytest.param(b"\x08\x80", id="truncated-varint"),
     pytest.param(b"\x0d\x00\x00\x00\x00", id="fixed32-unsupported")],
)
def test_decoder_refuses_malformed_input(data):
    with pytest.raises(ValueError):
        gnostic.decode_fields(data)


def test_negative_varint_refused():
    with pytest.raises(ValueError):
        gnostic.encode_varint(-1)


def test_schema_message_field_numbers():
    encoded = fields(gnostic.schema({
        "$ref": "#/definitions/X", "description": "d", "type": "array", "format": "int32", "required": ["a", "b"],
        "items": {"type": "string"}, "maximum": 3, "minLength": 2, "uniqueItems": True, "enum": ["x"],
        "additionalProperties": {"type": "integer"}, "properties": {"p": {"type": "boolean"}},
        "x-kubernetes-list-type": "set", "unknownKeyword": 1}))
    assert encoded[1] == [b"#/definitions/X"] and encoded[2] == [b"int32"] and encoded[4] == [b"d"]
    assert encoded[19] == [b"a", b"b"]  # required
    assert struct.unpack("<d", encoded[7][0]) == (3.0,)  # maximum, a double
    assert encoded[12] == [2] and encoded[16] == [1]  # min_length, unique_items
    assert fields(encoded[20][0]) == {2: [b'"x"']}  # enum: Any.yaml
    assert fields(fields(fields(encoded[21][0])[1][0])[22][0]) == {1: [b"integer"]}  # additionalProperties.schema
    assert fields(encoded[22][0]) == {1: [b"array"]}  # TypeItem.value
    assert fields(fields(encoded[23][0])[1][0])[22]  # ItemsItem.schema[0].type
    assert named(encoded[25][0], 1).keys() == {"p"}  # Properties
    extension = fields(encoded[31][0])
    assert extension[1] == [b"x-kubernetes-list-type"] and fields(extension[2][0]) == {2: [b'"set"']}
    assert set(encoded) == {1, 2, 4, 7, 12, 16, 19, 20, 21, 22, 23, 25, 31}  # unknownKeyword dropped


def test_query_path_and_body_parameters():
    query = fields(gnostic.parameter({"in": "query", "name": "dryRun", "type": "string", "uniqueItems": True}))
    sub = fields(fields(query[2][0])[3][0])  # non_body_parameter → query_parameter_sub_schema
    assert sub[2] == [b"query"] and sub[4] == [b"dryRun"] and sub[6] == [b"string"] and sub[20] == [1]
    path = fields(gnostic.parameter({"in": "path", "name": "name", "required": True, "type": "string"}))
    sub = fields(fields(path[2][0])[4][0])  # path_parameter_sub_schema: type is 5
    assert sub[1] == [1] and sub[5] == [b"string"]
    body = fields(gnostic.parameter({"in": "body", "name": "body", "required": True,
                                     "schema": {"$ref": "#/definitions/P"}}))
    sub = fields(body[1][0])
    assert sub[2] == [b"body"] and sub[4] == [1] and fields(sub[5][0]) == {1: [b"#/definitions/P"]}


# -- v2 ---------------------------------------------------------------------------------------------------

def supports_dry_run(document: bytes, group: str, version: str, kind: str) -> bool | None:
    """kubectl 1.20's openapi.SupportsDryRun over the protobuf: the first path whose PATCH carries the
    kind's x-kubernetes-group-version-kind decides by whether a query parameter is named dryRun; None
    when no path has the kind ("couldn't find GVK in openapi")."""
    paths = fields(fields(document)[8][0])
    for entry in paths.get(2, []):
        item = fields(fields(entry)[2][0])
        if 8 not in item:
            continue
        patch = fields(item[8][0])
        extensions = {fields(e)[1][0]: json.loads(fields(fields(e)[2][0])[2][0]) for e in patch.get(13, [])}
        if extensions.get(b"x-kubernetes-group-version-kind") != {"group": group, "kind": kind, "version": version}:
            continue
        for parameter in patch.get(8, []):
            parameter_fields = fields(parameter)
            if 1 not in parameter_fields:
                continue
            non_body = fields(fields(parameter_fields[1][0]).get(2, [b""])[0])
            if 3 in non_body and fields(non_body[3][0]).get(4) == [b"dryRun"]:
                return True
        return False
    return None


def test_v2_protobuf_is_a_gnostic_document_kubectl_finds_dry_run_in():
    document = DOCUMENTS.v2_protobuf()
    top = fields(document)
    assert top[1] == [b"2.0"]
    assert fields(top[2][0]) == {1: [b"Kubernetes"], 2: [KUBERNETES_VERSION.encode()]}
    definitions = named(top[9][0], 1)
    assert "io.k8s.api.core.v1.Pod" in definitions and "io.k8s.api.apps.v1.Deployment" in definitions
    for resource in resources.RESOURCES:
        if "patch" in resource.verbs:
            assert supports_dry_run(document, resource.group, resource.version, resource.kind), resource.kind
    assert supports_dry_run(document, "example.com", "v1", "Nothing") is None


def test_v2_json_has_upstream_schema_facts():
    v2 = json.loads(DOCUMENTS.v2_json())
    assert v2["info"] == {"title": "Kubernetes", "version": KUBERNETES_VERSION}
    containers = v2["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-list-type"] == "map" and containers["x-kubernetes-list-map-keys"] == ["name"]
    assert {"group": "apps", "kind": "Deployment", "version": "v1"} in v2["definitions"][
        "io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"]
    patch = v2["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    names = {p.get("name") or v2["parameters"][p["$ref"].rsplit("/", 1)[1]]["name"] for p in patch["parameters"]}
    assert {"dryRun", "fieldValidation", "fieldManager", "body"} <= names
    refs = {ref for ref in openapi.refs_below(v2) if ref.startswith("#/definitions/")}
    assert all(ref.rsplit("/", 1)[1] in v2["definitions"] for ref in refs)  # closed under $ref


def only(*entries: Resource):
    return openapi.OpenAPIDocuments(lambda: entries)


PODS = resources.by_path("", "v1", "pods")
INGRESS = Resource("networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", True,
                   subresources={"status": SubResource("Ingress", ("get", "patch", "update"))})


def test_the_served_set_decides_paths_and_definitions():
    assert PODS is not None
    pods_only = only(Resource("", "v1", "pods", "pod", "Pod", True)).v2()
    assert "/api/v1/namespaces/{namespace}/pods/{name}" in pods_only["paths"]
    assert "/api/v1/namespaces/{namespace}/pods/{name}/status" not in pods_only["paths"]  # not served here
    assert not any("/services" in path or "/apis/" in path for path in pods_only["paths"])
    assert "io.k8s.api.core.v1.Service" not in pods_only["definitions"]
    with_ingress = only(PODS, INGRESS)
    assert "/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses/{name}/status" in with_ingress.v2()["paths"]
    assert with_ingress.definition_for("networking.k8s.io", "v1", "Ingress") == "io.k8s.api.networking.v1.Ingress"
    assert "apis/networking.k8s.io/v1" in with_ingress.v3_index()["paths"]


def test_served_set_read_at_every_request():
    table: list[Resource] = [Resource("", "v1", "pods", "pod", "Pod", True)]
    documents = openapi.OpenAPIDocuments(lambda: table)
    assert documents.definition_for("networking.k8s.io", "v1", "Ingress") is None
    table.append(INGRESS)
    assert documents.definition_for("networking.k8s.io", "v1", "Ingress") == "io.k8s.api.networking.v1.Ingress"


@pytest.mark.parametrize(("group", "version", "kind"), [
    ("networking.k8s.io", "v1", "Ingress"), ("networking.k8s.io", "v1", "IngressClass"),
    ("networking.k8s.io", "v1", "NetworkPolicy"), ("storage.k8s.io", "v1", "StorageClass"),
    ("storage.k8s.io", "v1", "CSIDriver"), ("storage.k8s.io", "v1", "CSINode"),
    ("storage.k8s.io", "v1", "VolumeAttachment"), ("", "v1", "PersistentVolume"),
    ("", "v1", "PersistentVolumeClaim"), ("autoscaling", "v1", "HorizontalPodAutoscaler"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"), ("certificates.k8s.io", "v1", "CertificateSigningRequest"),
    ("node.k8s.io", "v1", "RuntimeClass"), ("apiregistration.k8s.io", "v1", "APIService"),
    ("", "v1", "ComponentStatus"), ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"), ("batch", "v1", "Job"),
    ("batch", "v1", "CronJob"), ("apps", "v1", "DaemonSet"), ("apps", "v1", "StatefulSet"),
    ("apps", "v1", "ControllerRevision"), ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
])
def test_data_file_has_the_kinds_the_issues_add(group, version, kind):
    """The groups served later (networking, storage, certificates, …): a resource-table entry is enough to be
    in the documents."""
    spec = openapi.upstream_spec()
    assert any({"group": group, "version": version, "kind": kind} in d.get("x-kubernetes-group-version-kind", [])
               for d in spec["definitions"].values())


@pytest.mark.parametrize(("path", "expected"), [
    ("/api/v1/namespaces/{namespace}/pods/{name}/status", openapi.ResourcePath("", "v1", "pods", "status")),
    ("/api/v1/namespaces/{name}", openapi.ResourcePath("", "v1", "namespaces")),
    ("/api/v1/namespaces/{name}/finalize", openapi.ResourcePath("", "v1", "namespaces", "finalize")),
    ("/api/v1/watch/namespaces/{namespace}/pods", openapi.ResourcePath("", "v1", "pods")),
    ("/apis/apps/v1/deployments", openapi.ResourcePath("apps", "v1", "deployments")),
    ("/apis/apps/v1/", openapi.ResourcePath("apps", "v1")),
    ("/apis/apps/", None), ("/version/", None),
])
def test_parse_path(path, expected):
    assert openapi.parse_path(path) == expected


# -- v3 ---------------------------------------------------------------------------------------------------

def test_v3_index_and_documents():
    index = DOCUMENTS.v3_index()["paths"]
    assert set(index) >= {"api/v1", "apis/apps/v1"}
    url = index["apis/apps/v1"]["serverRelativeURL"]
    found = DOCUMENTS.v3("apis/apps/v1")
    assert found is not None
    data, digest = found
    assert url == f"/openapi/v3/apis/apps/v1?hash={digest}" and len(digest) == 128 and digest.isupper()
    document = json.loads(data)
    assert document["openapi"] == "3.0.0"
    schemas = document["components"]["schemas"]
    spec = schemas["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}]
    assert spec["description"]  # kept beside the wrapped $ref
    assert "#/definitions/" not in data.decode()
    patch = document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert {p["name"] for p in patch["parameters"] if p["in"] == "query"} >= {"dryRun", "fieldValidation"}
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "apps", "kind": "Deployment", "version": "v1"}
    assert not any(path.startswith("/api/v1") for path in document["paths"])
    assert DOCUMENTS.v3("apis/nothing.example.com/v1") is None


# -- custom kinds ----------------------------------------------------------------------------------------

def test_add_custom_publishes_a_kind_with_paths_and_remove_takes_it_back():
    documents = only(Resource("", "v1", "pods", "pod", "Pod", True))
    schema = {"type": "object", "properties": {"spec": {"type": "object", "description": "the spec",
                                                        "properties": {"size": {"type": "integer"}}}}}
    documents.add_custom("stable.example.com", "v1", "CronTab", schema, plural="crontabs", namespaced=True)
    assert documents.definition_for("stable.example.com", "v1", "CronTab") == "com.example.stable.v1.CronTab"
    definition = documents.definitions()["com.example.stable.v1.CronTab"]
    assert definition["properties"]["metadata"]["$ref"].endswith("meta.v1.ObjectMeta")
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in documents.definitions()
    assert supports_dry_run(documents.v2_protobuf(), "stable.example.com", "v1", "CronTab")
    assert "apis/stable.example.com/v1" in documents.v3_index()["paths"]
    found = documents.v3("apis/stable.example.com/v1")
    assert found is not None and "com.example.stable.v1.CronTabList" in json.loads(found[0])["components"]["schemas"]
    documents.remove_custom("stable.example.com", "v1", "CronTab")
    assert documents.definition_for("stable.example.com", "v1", "CronTab") is None
    assert "apis/stable.example.com/v1" not in documents.v3_index()["paths"]


def test_generator_keeps_the_listed_group_versions_and_what_they_reach():
    from control.apiserver.openapi.data import generate

    gvk = "x-kubernetes-group-version-kind"
    spec = {
        "swagger": "2.0",
        "definitions": {
            "a.v1.Thing": {gvk: [{"group": "a", "version": "v1", "kind": "Thing"}],
                           "properties": {"spec": {"$ref": "#/definitions/a.v1.ThingSpec"}}},
            "a.v1.ThingSpec": {"properties": {"meta": {"$ref": "#/definitions/meta.Meta"}}},
            "meta.Meta": {"type": "object"},
            "meta.Options": {"type": "object"},
            "b.v1.Other": {gvk: [{"group": "b", "version": "v1", "kind": "Other"}]},
        },
        "paths": {"/apis/a/v1/things": {"parameters": [{"$ref": "#/parameters/opts"}]},
                  "/apis/b/v1/others": {}},
        "parameters": {"opts": {"in": "body", "name": "body", "schema": {"$ref": "#/definitions/meta.Options"}},
                       "unused": {"in": "query", "name": "x"}},
    }
    kept = generate.select(spec, (("a", "v1"),))
    assert set(kept["definitions"]) == {"a.v1.Thing", "a.v1.ThingSpec", "meta.Meta", "meta.Options"}
    assert set(kept["paths"]) == {"/apis/a/v1/things"} and set(kept["parameters"]) == {"opts"}
