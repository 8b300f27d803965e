"""The generator of the API type table (control/apiserver/codec/proto_data/generate.py) on small upstream-shaped
texts: what it reads from generated.proto and types.go, what it refuses, and that protoschema.py loads what it
writes. (The table in the tree is checked by test_protoschema.py; the upstream files it came from are not
in the repository.)"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from control.apiserver.codec import protoschema
from control.apiserver.codec.proto_data import generate
from control.apiserver.codec.proto_data.generate import GoField, Markers, ProtoField

PROTO = """
/* licence header */
syntax = "proto2";

package k8s.io.api.apps.v1;

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

message WidgetSpec {
  optional string uID = 1;

  optional Volume volume = 2;

  optional .k8s.io.api.resource.v1alpha3.Claim claim = 3;
}

message Volume {
  optional string name = 1;

  optional VolumeSource volumeSource = 2;
}

message VolumeSource {
  optional string path = 1;
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
	// +listType=set
	Tags []string `json:"tags,omitempty" patchStrategy:"merge" protobuf:"bytes,3,rep,name=tags"` // a comment
	// +mapType=atomic
	Blobs map[string][]byte `json:"blobs,omitempty" protobuf:"bytes,4,rep,name=blobs"`
}

// +structType=atomic
type WidgetSpec struct {
	UID string `json:"uid" protobuf:"bytes,1,opt,name=uID"`
	Volume Volume `json:"volume" protobuf:"bytes,2,opt,name=volume"`
	Claim *Claim `json:"claim,omitempty" protobuf:"bytes,3,opt,name=claim"`
}

type Volume struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	VolumeSource `json:"" protobuf:"bytes,2,opt,name=volumeSource"`
}

type VolumeSource struct {
	Path string `json:"path,omitempty" protobuf:"bytes,1,opt,name=path"`
}

type Names []string
"""

META_PROTO = """
syntax = "proto2";
package k8s.io.apimachinery.pkg.apis.meta.v1;
message ObjectMeta {
  optional string name = 1;
}
"""

SOURCE = """
| files | repository | commit |
|---|---|---|
| `k8s.io/api/...` | https://github.com/kubernetes/api | 10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2 (2026-07-24) |
"""


def test_parse_proto_reads_messages_fields_maps_and_nullable_markers() -> None:
    package, messages, nullable = generate.parse_proto(PROTO)
    assert package == "k8s.io.api.apps.v1"
    assert messages["k8s.io.api.apps.v1.Widget"] == {
        1: ProtoField("metadata", "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", "optional"),
        2: ProtoField("spec", "k8s.io.api.apps.v1.WidgetSpec", "optional"),
        3: ProtoField("tags", "string", "repeated"), 4: ProtoField("blobs", "bytes", "map")}
    assert messages["k8s.io.api.apps.v1.Names"] == {1: ProtoField("items", "string", "repeated")}
    assert nullable == {"k8s.io.api.apps.v1.Names"}


def test_parse_proto_refuses_what_it_does_not_understand() -> None:
    with pytest.raises(ValueError):
        generate.parse_proto(PROTO.replace("repeated string tags = 3;", "oneof choice { string a = 5; }"))
    with pytest.raises(ValueError):
        generate.parse_proto("message A {}")


def test_parse_go_structs_reads_json_names_pointers_embedding_and_markers() -> None:
    go = generate.parse_go_structs(GO)
    assert go.fields["Widget"] == {1: GoField("metadata", pointer=False, omitempty=True),
                                   2: GoField("spec", pointer=True, omitempty=False),
                                   3: GoField("tags", pointer=False, omitempty=True),
                                   4: GoField("blobs", pointer=False, omitempty=True)}
    assert go.fields["Volume"] == {1: GoField("name", pointer=False, omitempty=False),
                                   2: GoField("", pointer=False, omitempty=False)}
    assert go.markers["Widget"][3] == Markers(list_type="set", strategy="merge")
    assert go.markers["Widget"][4] == Markers(atomic=True)
    assert go.markers["Widget"][1] == Markers()
    assert go.atomic == {"WidgetSpec"}


def test_markers_are_read_from_the_comment_block_of_each_field() -> None:
    text = '''
// +structType=atomic
type Sel struct {
	// +listType=map
	// +listMapKey=a
	// +listMapKey=b
	Items []Item `json:"items" protobuf:"bytes,1,rep,name=items"`
	Plain []string `json:"plain" patchStrategy:"merge" patchMergeKey:"k" protobuf:"bytes,2,rep,name=plain"`

	// +listType=atomic

	Loose []string `json:"loose" protobuf:"bytes,3,rep,name=loose"`
}
'''
    go = generate.parse_go_structs(text)
    assert go.atomic == {"Sel"}
    assert go.markers["Sel"] == {1: Markers(list_type="map", keys=("a", "b")),
                                 2: Markers(strategy="merge", merge_key="k"),
                                 3: Markers()}  # a blank line ends the comment block


def write_sources(root: Path, go: str = GO) -> None:
    (root / "k8s.io/api/apps/v1").mkdir(parents=True)
    (root / "k8s.io/api/apps/v1/generated.proto").write_text(PROTO)
    (root / "k8s.io/api/apps/v1/types.go").write_text(go)
    (root / "k8s.io/apimachinery/pkg/apis/meta/v1").mkdir(parents=True)
    (root / "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto").write_text(META_PROTO)
    (root / "SOURCE.md").write_text(SOURCE)


def test_the_generated_table_loads_into_the_codec_tables(tmp_path: Path) -> None:
    write_sources(tmp_path)
    assert generate.main(["generate", str(tmp_path), str(tmp_path / "out.json.gz")]) == 0
    table = json.loads(gzip.decompress((tmp_path / "out.json.gz").read_bytes()))
    assert table["source"] == [{"files": "`k8s.io/api/...`", "repository": "https://github.com/kubernetes/api",
                                "commit": "10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2", "date": "2026-07-24"}]
    schemas = protoschema.load(tmp_path / "out.json.gz")
    widget, spec = "k8s.io.api.apps.v1.Widget", "k8s.io.api.apps.v1.WidgetSpec"
    assert schemas.kinds == {("apps/v1", "Widget"): widget}
    assert schemas.messages[spec] == {  # the alpha group's claim is left out; uID is JSON's uid
        1: protoschema.Field("uid", "string", "optional", omitempty=False),
        2: protoschema.Field("volume", "k8s.io.api.apps.v1.Volume", "optional", omitempty=False)}
    assert schemas.messages["k8s.io.api.apps.v1.Volume"][2] == protoschema.Field(
        "", "k8s.io.api.apps.v1.VolumeSource", "optional", omitempty=False)
    assert schemas.messages["k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"] == {
        1: protoschema.Field("name", "string", "optional")}  # no types.go: the proto name
    assert schemas.list_wrappers == {"k8s.io.api.apps.v1.Names"}
    assert schemas.markers[widget] == {3: protoschema.Markers(list_type="set", strategy="merge"),
                                       4: protoschema.Markers(atomic=True)}
    assert schemas.atomic_structs == {spec}
    again = tmp_path / "again.json.gz"
    generate.main(["generate", str(tmp_path), str(again)])
    assert again.read_bytes() == (tmp_path / "out.json.gz").read_bytes()  # the same input, the same bytes


def test_a_field_of_an_api_group_without_a_go_tag_is_refused(tmp_path: Path) -> None:
    write_sources(tmp_path, GO.replace(' protobuf:"bytes,3,rep,name=tags"', ""))
    with pytest.raises(ValueError, match="Widget.tags"):
        generate.build(tmp_path)
