"""Field sets as structured-merge-diff computes them: which paths a value sets, how two values differ, how an
applied configuration merges, what removing fields leaves, and the FieldsV1 encoding."""

from __future__ import annotations

import json
from typing import Any

import pytest

from control.apiserver.fieldmanager import fieldset
from control.apiserver.fieldmanager.fieldschema import schema

S = schema()
DEPLOYMENT = S.root("apps/v1", "Deployment")
POD = S.root("v1", "Pod")
CONFIGMAP = S.root("v1", "ConfigMap")


def containers(*items: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"containers": list(items)}}


def fields_v1(t: Any, value: Any) -> dict[str, Any]:
    return fieldset.to_fields_v1(fieldset.to_field_set(S, t, value))


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        pytest.param(CONFIGMAP, {"data": {"a": "1"}}, {"f:data": {"f:a": {}}}, id="map-keys"),
        pytest.param(CONFIGMAP, {"metadata": {"labels": {}}}, {"f:metadata": {"f:labels": {}}},
                     id="empty-map-is-a-member"),
        pytest.param(POD, containers({"name": "a", "image": "x"}),
                     {"f:spec": {"f:containers": {'k:{"name":"a"}': {".": {}, "f:image": {}, "f:name": {}}}}},
                     id="keyed-list-element-is-a-member"),
        pytest.param(POD, containers({"name": "a", "ports": [{"containerPort": 80}]}),
                     {"f:spec": {"f:containers": {'k:{"name":"a"}': {
                         ".": {}, "f:name": {},
                         "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}}}},
                     id="defaulted-key-field"),
        pytest.param(POD, containers({"name": "a", "command": ["sh", "-c"]}),
                     {"f:spec": {"f:containers": {'k:{"name":"a"}': {".": {}, "f:command": {}, "f:name": {}}}}},
                     id="atomic-list-is-a-leaf"),
        pytest.param(CONFIGMAP, {"metadata": {"finalizers": ["x", "y"]}},
                     {"f:metadata": {"f:finalizers": {'v:"x"': {}, 'v:"y"': {}}}}, id="set-elements"),
        pytest.param(DEPLOYMENT, {"spec": {"selector": {"matchLabels": {"a": "b"}}}},
                     {"f:spec": {"f:selector": {}}}, id="atomic-struct"),
        pytest.param(POD, {"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}},
                     {"f:spec": {"f:volumes": {'k:{"name":"v"}': {".": {}, "f:emptyDir": {}, "f:name": {}}}}},
                     id="empty-struct-is-a-member"),
        pytest.param(S.root("example.com/v1", "Widget"), {"spec": {"a": {"b": 1}, "l": [1]}},
                     {"f:spec": {".": {}, "f:a": {".": {}, "f:b": {}}, "f:l": {}}}, id="deduced"),
    ],
)
def test_to_field_set(t: Any, value: Any, expected: dict[str, Any]) -> None:
    assert fields_v1(t, value) == expected


def test_fields_v1_round_trips_and_refuses_garbage() -> None:
    value = {"metadata": {"labels": {"a": "b"}}, **containers({"name": "a", "env": [{"name": "E", "value": "1"}]})}
    paths = fieldset.to_field_set(S, POD, value)
    assert fieldset.from_fields_v1(json.loads(json.dumps(fieldset.to_fields_v1(paths)))) == paths
    for bad in ({"x:y": {}}, {"f:a": 1}, {"k:{nope": {}}, []):
        with pytest.raises(fieldset.FieldSetError):
            fieldset.from_fields_v1(bad)


def test_compare_marks_new_subtrees_and_modified_leaves() -> None:
    old = {"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}}
    new = {"metadata": {"labels": {"app": "w"}},
           "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "b", "image": "y"}]}}}}
    diff = fieldset.compare(S, DEPLOYMENT, old, new)
    assert [fieldset.path_string(p) for p in sorted(diff.modified)] == [".spec.replicas"]
    assert fieldset.to_fields_v1(diff.added) == {
        "f:metadata": {".": {}, "f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:template": {"f:spec": {"f:containers": {
            'k:{"name":"b"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}
    assert {fieldset.path_string(p) for p in diff.removed} == {
        '.spec.template.spec.containers[name="a"]', '.spec.template.spec.containers[name="a"].image',
        '.spec.template.spec.containers[name="a"].name'}
    assert fieldset.compare(S, DEPLOYMENT, old, old) == fieldset.Comparison()


@pytest.mark.parametrize(
    ("live", "config", "merged"),
    [
        pytest.param(["a", "b"], ["b", "c"], ["a", "b", "c"], id="config-element-after-shared"),
        pytest.param(["a", "b", "c"], ["c", "a"], ["b", "c", "a"], id="config-order-of-shared"),
        pytest.param(["x"], ["n"], ["x", "n"], id="new-appended"),
    ],
)
def test_merge_keyed_list_order(live: list[str], config: list[str], merged: list[str]) -> None:
    def pod(names: list[str]) -> dict[str, Any]:
        return containers(*({"name": n} for n in names))

    result = fieldset.merge(S, POD, pod(live), pod(config))
    assert [c["name"] for c in result["spec"]["containers"]] == merged


def test_merge_keeps_live_fields_and_replaces_atomic_ones() -> None:
    live = {"metadata": {"labels": {"k": "v"}},
            "spec": {"containers": [{"name": "a", "image": "x", "command": ["a", "b"], "imagePullPolicy": "Always"}],
                     "nodeSelector": {"k": "v"}, "hostname": "h"}}
    config = {"metadata": {"labels": {"z": "1"}},
              "spec": {"containers": [{"name": "a", "image": "y", "command": ["c"]}], "nodeSelector": {"z": "1"},
                       "hostname": None}}
    assert fieldset.merge(S, POD, live, config) == {
        "metadata": {"labels": {"k": "v", "z": "1"}},
        "spec": {"containers": [{"name": "a", "image": "y", "command": ["c"], "imagePullPolicy": "Always"}],
                 "nodeSelector": {"z": "1"}}}  # +mapType=atomic


def test_merge_refuses_duplicate_keys_in_the_configuration() -> None:
    with pytest.raises(fieldset.FieldSetError, match="duplicate entries"):
        fieldset.merge(S, POD, containers({"name": "a"}), containers({"name": "a"}, {"name": "a"}))
    with pytest.raises(fieldset.FieldSetError, match="duplicate entries"):
        fieldset.to_field_set(S, POD, containers({"name": "a"}, {"name": "a"}), strict=True)
    with pytest.raises(fieldset.FieldSetError, match='omits key field "name"'):
        fieldset.to_field_set(S, POD, containers({"image": "x"}))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(containers({"name": "a"}, {"name": "a"}),
                     '.spec.containers: duplicate entries for key [name="a"]', id="duplicate"),
        pytest.param(containers({"name": "a", "imagee": "x"}),
                     '.spec.containers[name="a"].imagee: field not declared in schema', id="unknown-field"),
        pytest.param(containers({"image": "x"}),
                     ".spec.containers: element 0: associative list with keys has an element that omits key field "
                     '"name" (and doesn\'t have default value)', id="missing-key"),
    ],
)
def test_strict_field_set_refuses_what_upstream_cannot_type(value: dict[str, Any], message: str) -> None:
    with pytest.raises(fieldset.FieldSetError) as refused:
        fieldset.to_field_set(S, POD, {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"x": "y"}}, **value},
                              strict=True)
    assert str(refused.value) == message
    assert fieldset.to_field_set(S, POD, {"metadata": {"annotations": {"free": "keys"}}}, strict=True)


def test_remove_items() -> None:
    value = {"metadata": {"labels": {"a": "1", "b": "2"}},
             **containers({"name": "a", "image": "x"}, {"name": "b", "image": "y"})}
    removed = fieldset.remove_items(S, POD, value, {("f:metadata", "f:labels", "f:a"),
                                                     ("f:spec", "f:containers", 'k:{"name":"b"}')})
    assert removed == {"metadata": {"labels": {"b": "2"}}, **containers({"name": "a", "image": "x"})}
    assert value["metadata"]["labels"] == {"a": "1", "b": "2"}  # the input is left alone


@pytest.mark.parametrize(
    ("path", "text"),
    [
        pytest.param(("f:spec", "f:replicas"), ".spec.replicas", id="fields"),
        pytest.param(("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}', "f:name"),
                     '.spec.ports[port=80,protocol="TCP"].name', id="keys"),
        pytest.param(("f:metadata", "f:finalizers", 'v:"a/b"'), '.metadata.finalizers[="a/b"]', id="set-value"),
    ],
)
def test_path_string(path: tuple[str, ...], text: str) -> None:
    assert fieldset.path_string(path) == text
