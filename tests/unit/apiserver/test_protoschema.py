"""The message tables built from upstream's generated.proto and Go struct tags (control/apiserver/
codec/protoschema.py): the parser on small texts, and the vendored files as a whole."""

from __future__ import annotations

import pytest

from control.apiserver.codec import protoschema
from control.apiserver.codec.protoschema import Field, GoField

PROTO = """
/* licence header */
syntax = "proto2";

package k8s.io.api.example.v1;

import "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto";

// Widget is an example.
message Widget {
  // Standard object metadata.
  // +optional
  optional .k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta metadata = 1;

  optional WidgetSpec spec = 2;

  repeated string tags = 3;

  map<string, bytes> blobs = 4;
}

// +protobuf.nullable=true
message Names {
  repeated string items = 1;
}
"""

GO = """
type Widget struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Spec *WidgetSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	Tags []string `json:"tags,omitempty" protobuf:"bytes,3,rep,name=tags"` // a trailing comment
}

type Volume struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	VolumeSource `json:"" protobuf:"bytes,2,opt,name=volumeSource"`
}
"""


def test_parse_proto_reads_messages_fields_maps_and_nullable_markers() -> None:
    messages, nullable = protoschema.parse_proto(PROTO)
    meta = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    assert messages == {
        "k8s.io.api.example.v1.Widget": {1: Field("metadata", meta, "optional"),
                                         2: Field("spec", "k8s.io.api.example.v1.WidgetSpec", "optional"),
                                         3: Field("tags", "string", "repeated"), 4: Field("blobs", "bytes", "map")},
        "k8s.io.api.example.v1.Names": {1: Field("items", "string", "repeated")}}
    assert nullable == {"k8s.io.api.example.v1.Names"}


def test_parse_proto_refuses_what_it_does_not_understand() -> None:
    with pytest.raises(ValueError):
        protoschema.parse_proto(PROTO.replace("repeated string tags = 3;", "oneof choice { string a = 5; }"))
    with pytest.raises(ValueError):
        protoschema.parse_proto("message A {}")


def test_parse_go_structs_reads_json_names_pointers_and_embedding() -> None:
    assert protoschema.parse_go_structs(GO) == {
        "Widget": {1: GoField("metadata", pointer=False, omitempty=True),
                   2: GoField("spec", pointer=True, omitempty=False),
                   3: GoField("tags", pointer=False, omitempty=True)},
        "Volume": {1: GoField("name", pointer=False, omitempty=False),
                   2: GoField("", pointer=False, omitempty=False)}}


def test_vendored_tables_cover_the_served_kinds_and_every_field_has_its_go_tag() -> None:
    schemas = protoschema.schemas()
    assert {("v1", "Pod"), ("v1", "Service"), ("apps/v1", "Deployment"), ("batch/v1", "CronJob"),
            ("policy/v1", "Eviction"), ("policy/v1beta1", "Eviction"), ("discovery.k8s.io/v1", "EndpointSlice"),
            ("authentication.k8s.io/v1", "TokenRequest"), ("networking.k8s.io/v1", "Ingress"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"), ("certificates.k8s.io/v1", "CertificateSigningRequest"),
            ("node.k8s.io/v1", "RuntimeClass"), ("storage.k8s.io/v1", "CSIDriver"),
            ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
            ("apiregistration.k8s.io/v1", "APIService")} <= set(schemas.kinds)
    # every field of the vendored API packages has a Go tag
    for proto in [*protoschema.ROOT.glob("k8s.io/api/*/*/generated.proto"),
                  *protoschema.ROOT.glob("k8s.io/kube-aggregator/pkg/apis/*/*/generated.proto")]:
        go = protoschema.parse_go_structs(proto.with_name("types.go").read_text())
        for name, fields in protoschema.parse_proto(proto.read_text())[0].items():
            short = name.rsplit(".", 1)[1]
            assert short in ("List", "ExtraValue", "AttestationValue") or set(fields) <= set(go[short]), name
    # a fact only the Go side has: the proto's `uID` is JSON's `uid`; `handler` is inlined into Probe
    bound = schemas.messages["k8s.io.api.authentication.v1.BoundObjectReference"]
    assert bound[4].json == "uid"
    assert schemas.messages["k8s.io.api.core.v1.Probe"][1].json == ""
    # every message a field names is known (or one of the decoder's special types)
    known = set(schemas.messages) | protoschema.SCALARS
    assert {field.type for fields in schemas.messages.values() for field in fields.values()} <= known
