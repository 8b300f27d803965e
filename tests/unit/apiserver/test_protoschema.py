"""The generated table of the API types (control/apiserver/codec/proto_data/schema.json.gz, loaded
by control/apiserver/codec/protoschema.py): upstream's field numbers, names and Go struct facts as the protobuf codec
and server-side apply read them. How the table is made: test_proto_data_generate.py."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from control.apiserver.codec import protoschema
from control.apiserver.codec.protoschema import META, Field, Markers

CORE = "k8s.io.api.core.v1."
APPS = "k8s.io.api.apps.v1."


def raw_table() -> dict[str, Any]:
    result: dict[str, Any] = json.loads(gzip.decompress(protoschema.TABLE.read_bytes()))
    return result


def test_the_table_covers_the_served_kinds() -> None:
    kinds = protoschema.schemas().kinds
    assert {("v1", "Pod"), ("v1", "Service"), ("apps/v1", "Deployment"), ("batch/v1", "CronJob"),
            ("policy/v1", "Eviction"), ("policy/v1beta1", "Eviction"), ("discovery.k8s.io/v1", "EndpointSlice"),
            ("authentication.k8s.io/v1", "TokenRequest"), ("networking.k8s.io/v1", "Ingress"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"), ("certificates.k8s.io/v1", "CertificateSigningRequest"),
            ("node.k8s.io/v1", "RuntimeClass"), ("storage.k8s.io/v1", "CSIDriver"),
            ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
            ("apiregistration.k8s.io/v1", "APIService")} <= set(kinds)
    assert kinds[("v1", "Pod")] == CORE + "Pod"
    assert kinds[("apiregistration.k8s.io/v1", "APIService")] == (
        "k8s.io.kube_aggregator.pkg.apis.apiregistration.v1.APIService")


@pytest.mark.parametrize(
    ("message", "number", "field"),
    [
        pytest.param(CORE + "Pod", 2, Field("spec", CORE + "PodSpec", "optional"), id="Pod.spec"),
        pytest.param(CORE + "Pod", 1, Field("metadata", META + "ObjectMeta", "optional"), id="Pod.metadata"),
        pytest.param(META + "ObjectMeta", 1, Field("name", "string", "optional"), id="ObjectMeta.name"),
        pytest.param(META + "ObjectMeta", 5, Field("uid", "string", "optional"), id="ObjectMeta.uid"),
        pytest.param(META + "ObjectMeta", 11, Field("labels", "string", "map"), id="ObjectMeta.labels"),
        pytest.param(CORE + "Container", 2, Field("image", "string", "optional"), id="Container.image"),
        pytest.param(CORE + "Container", 3, Field("command", "string", "repeated"), id="Container.command"),
        pytest.param(CORE + "PodSpec", 2, Field("containers", CORE + "Container", "repeated", omitempty=False),
                     id="PodSpec.containers"),
        pytest.param(CORE + "Secret", 2, Field("data", "bytes", "map"), id="Secret.data"),
        pytest.param(APPS + "DeploymentSpec", 1, Field("replicas", "int32", "optional", pointer=True),
                     id="DeploymentSpec.replicas-pointer"),
        pytest.param(APPS + "DeploymentSpec", 7, Field("paused", "bool", "optional"), id="DeploymentSpec.paused"),
        pytest.param(APPS + "DeploymentSpec", 3,
                     Field("template", CORE + "PodTemplateSpec", "optional", omitempty=False),
                     id="DeploymentSpec.template-not-omitempty"),
        pytest.param(CORE + "Volume", 2, Field("", CORE + "VolumeSource", "optional", omitempty=False),
                     id="Volume.volumeSource-inlined"),
        pytest.param(CORE + "Probe", 1, Field("", CORE + "ProbeHandler", "optional", omitempty=False),
                     id="Probe.handler-inlined"),
        pytest.param("k8s.io.api.authentication.v1.BoundObjectReference", 4, Field("uid", "string", "optional"),
                     id="proto-uID-is-json-uid"),
        pytest.param("k8s.io.apimachinery.pkg.runtime.Unknown", 2, Field("raw", "bytes", "optional"),
                     id="untagged-keeps-proto-name"),
        pytest.param(CORE + "ServicePort", 4,
                     Field("targetPort", "k8s.io.apimachinery.pkg.util.intstr.IntOrString", "optional"),
                     id="ServicePort.targetPort"),
    ],
)
def test_field_facts(message: str, number: int, field: Field) -> None:
    assert protoschema.schemas().messages[message][number] == field


def test_unknown_numbers_and_alpha_types_are_absent() -> None:
    messages = protoschema.schemas().messages
    assert sorted(messages[APPS + "DeploymentSpec"]) == [1, 2, 3, 4, 5, 6, 7, 9]  # apps/v1 has no field 8
    # a field whose message is in no package of the table (an alpha group's) is left out, like an unknown field
    known = set(messages) | protoschema.SCALARS
    assert {field.type for fields in messages.values() for field in fields.values()} <= known


def test_every_field_of_an_api_group_has_its_go_tag() -> None:
    """The proto's names are not always JSON's: the table carries the Go struct tag of every field of the API
    groups' messages, except go-to-protobuf's own List and the list wrappers made from named slices."""
    for name, entry in raw_table()["messages"].items():
        if (name.startswith(("k8s.io.api.", "k8s.io.kube_aggregator.")) and not name.endswith(".List")
                and not entry.get("listWrapper")):
            assert all("json" in row for row in entry["fields"]), name


def test_nullable_list_wrappers() -> None:
    schemas = protoschema.schemas()
    assert schemas.list_wrappers == {
        "k8s.io.api.authentication.v1.ExtraValue", "k8s.io.api.authentication.v1.AttestationValue",
        "k8s.io.api.authorization.v1.ExtraValue", "k8s.io.api.certificates.v1.ExtraValue", META + "Verbs"}
    assert schemas.messages[META + "Verbs"] == {1: Field("items", "string", "repeated")}
    assert schemas.messages["k8s.io.api.authentication.v1.UserInfo"][4] == Field(
        "extra", "k8s.io.api.authentication.v1.ExtraValue", "map")


def test_apply_markers() -> None:
    schemas = protoschema.schemas()
    spec = schemas.markers[CORE + "PodSpec"]
    assert spec[2] == Markers(list_type="map", keys=("name",), strategy="merge", merge_key="name")  # containers
    assert spec[1] == Markers(list_type="map", keys=("name",), strategy="merge,retainKeys", merge_key="name")
    assert schemas.markers[CORE + "Container"][6] == Markers(  # ports
        list_type="map", keys=("containerPort", "protocol"), strategy="merge", merge_key="containerPort")
    assert schemas.markers[META + "ObjectMeta"][14] == Markers(list_type="set", strategy="merge")  # finalizers
    assert schemas.markers[CORE + "Container"][3] == Markers(list_type="atomic")  # command
    assert 2 not in schemas.markers.get(CORE + "PodList", {})  # items: no markers (atomic for apply)
    assert {META + "LabelSelector", META + "OwnerReference", CORE + "LocalObjectReference"} <= schemas.atomic_structs
    assert CORE + "PodSpec" not in schemas.atomic_structs


def test_the_table_records_its_upstream_commits() -> None:
    sources = {row["repository"]: row["commit"] for row in raw_table()["source"]}
    assert sources == {"https://github.com/kubernetes/api": "10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2",
                       "https://github.com/kubernetes/kube-aggregator": "232ca687ab24bc9f9a378cba74716b5f7d6b82eb",
                       "https://github.com/kubernetes/apimachinery": "eed236ceee2c19c2753a3d93ac0631dc20750454"}
    assert all(commit in (protoschema.TABLE.parent / "SOURCE.md").read_text() for commit in sources.values())
