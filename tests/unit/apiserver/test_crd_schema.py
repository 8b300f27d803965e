"""Structural schemas: validation messages as upstream's, defaulting, pruning, and the schema checks at CRD
creation (control/apiserver/apiextensions/schema.py)."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from control.apiserver.apiextensions import schema
from tests.support.crd_objects import WIDGET_SCHEMA


def messages(obj: dict[str, Any]) -> list[str]:
    return [e.message for e in schema.validate(obj, WIDGET_SCHEMA, "", root=True)]


def spec(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"size": "small", **fields}}


@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param(spec(), [], id="valid"),
    pytest.param({"spec": {}}, ["spec.size: Required value"], id="required"),
    pytest.param(spec(size="huge"), ['spec.size: Unsupported value: "huge": supported values: "small", "large"'],
                 id="enum"),
    pytest.param(spec(replicas="two"),
                 ['spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "two"'],
                 id="type"),
    pytest.param(spec(replicas=-1),
                 ["spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"],
                 id="minimum"),
    pytest.param(spec(color="Red"),
                 ['spec.color: Invalid value: "Red": spec.color in body should match \'^[a-z]+$\''], id="pattern"),
    pytest.param(spec(email="nope"),
                 ['spec.email: Invalid value: "nope": spec.email in body must be of type email: "nope"'],
                 id="format"),
    pytest.param(spec(port=8080), [], id="int-or-string-int"),
    pytest.param(spec(port="http"), [], id="int-or-string-string"),
    pytest.param(spec(port=1.5),
                 ['spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"'],
                 id="int-or-string-other"),
    pytest.param(spec(labels={"a": 1}),
                 ['spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"'],
                 id="additionalProperties"),
    pytest.param(spec(note=None), [], id="nullable"),
    pytest.param(spec(color=None),
                 ['spec.color: Invalid value: "null": spec.color in body must be of type string: "null"'],
                 id="not-nullable"),
    pytest.param(spec(template={"metadata": {"name": "x"}}),
                 ["spec.template.apiVersion: Required value: must not be empty",
                  "spec.template.kind: Required value: must not be empty"], id="embedded-resource-needs-kind"),
    pytest.param(spec(template={"apiVersion": "v1", "kind": "Pod", "anything": 1}), [], id="embedded-resource"),
])
def test_validation_messages_are_upstreams(obj, expected):
    assert messages(obj) == expected


@pytest.mark.parametrize(("node", "value", "expected"), [
    pytest.param({"type": "integer", "maximum": 3}, 4, "x in body should be less than or equal to 3", id="max"),
    pytest.param({"type": "integer", "maximum": 3, "exclusiveMaximum": True}, 3, "x in body should be less than 3",
                 id="exclusiveMaximum"),
    pytest.param({"type": "string", "minLength": 3}, "ab", "x in body should be at least 3 chars long", id="minLength"),
    pytest.param({"type": "string", "maxLength": 1}, "ab", "may not be more than 1 byte", id="maxLength"),
    pytest.param({"type": "array", "items": {"type": "string"}, "maxItems": 1}, ["a", "b"], "must have at most 1 items",
                 id="maxItems"),
    pytest.param({"type": "array", "items": {"type": "string"}, "minItems": 2}, ["a"],
                 "x in body should have at least 2 items", id="minItems"),
    pytest.param({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}, ["a", "a"], "",
                 id="set-duplicate"),
    pytest.param({"type": "number", "multipleOf": 0.5}, 0.7, "x in body should be a multiple of 0.5", id="multipleOf"),
    pytest.param({"type": "string", "format": "date-time"}, "yesterday",
                 'x in body must be of type date-time: "yesterday"', id="date-time"),
    pytest.param({"type": "integer", "format": "int32"}, 2**31, "x in body must be of type int32: 2147483648",
                 id="int32"),
])
def test_value_validations(node, value, expected):
    errors = schema.validate(value, node, "x")
    assert len(errors) == 1
    assert errors[0].detail == expected


def test_valid_formats_pass():
    for fmt, value in [("date", "2024-02-29"), ("date-time", "2024-01-01T00:00:00Z"), ("ipv4", "10.0.0.1"),
                       ("ipv6", "::1"), ("cidr", "10.0.0.0/8"), ("uuid", "0b7c2f64-8b7d-4bb8-8c8e-0f5c3b0a1d2e"),
                       ("byte", "aGk="), ("hostname", "a.example.com"), ("email", "a@b.io"), ("unknown", "x")]:
        assert schema.validate(value, {"type": "string", "format": fmt}, "x") == [], fmt


def test_pruning_drops_unknown_fields_but_keeps_preserved_and_server_fields():
    obj = spec(junk=1, extra={"free": {"form": True}}, labels={"a": "b"},
               template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "whatever": 1})
    obj["topLevelJunk"] = True
    obj["status"] = {"replicas": 1, "custom": "kept"}
    schema.prune(obj, WIDGET_SCHEMA)
    assert "topLevelJunk" not in obj
    assert "junk" not in obj["spec"]
    assert obj["spec"]["extra"] == {"free": {"form": True}}
    assert obj["spec"]["labels"] == {"a": "b"}
    assert obj["spec"]["template"]["metadata"] == {"name": "p"}
    assert obj["status"] == {"replicas": 1, "custom": "kept"}
    assert obj["metadata"] == {"name": "w"} and obj["apiVersion"] == "example.com/v1"


def test_pruning_inside_arrays_and_closed_embedded_resources():
    node = {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "embedded": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "properties": {"spec": {"type": "object"}}}}}
    value = {"items": [{"a": "x", "b": "y"}], "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {},
                                                           "spec": {}, "junk": 1}}
    schema.prune(value, node, root=False)
    assert value == {"items": [{"a": "x"}], "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {},
                                                         "spec": {}}}


def test_defaults_fill_absent_fields_and_null_ones_without_nullable():
    obj = spec(color=None, note=None)
    schema.apply_defaults(obj, WIDGET_SCHEMA)
    assert obj["spec"] == {"size": "small", "replicas": 1, "maxReplicas": 10, "color": "blue", "note": None}


def test_defaults_do_not_override_given_values_and_nulls_without_default_go():
    node = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer", "default": 3}}}
    value = {"a": None, "b": 5}
    schema.apply_defaults(value, node)
    assert value == {"b": 5}


def test_defaults_in_array_items_and_nested_objects():
    node = {"type": "object", "properties": {
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "protocol": {"type": "string", "default": "TCP"}}}},
        "nested": {"type": "object", "default": {}, "properties": {"x": {"type": "integer", "default": 7}}}}}
    value: dict[str, Any] = {"ports": [{}, {"protocol": "UDP"}]}
    schema.apply_defaults(value, node)
    assert value == {"ports": [{"protocol": "TCP"}, {"protocol": "UDP"}], "nested": {"x": 7}}


@pytest.mark.parametrize(("node", "expected"), [
    pytest.param(copy.deepcopy(WIDGET_SCHEMA), [], id="widget"),
    pytest.param({"type": "object", "properties": {"spec": {"properties": {}}}},
                 ["s.properties[spec].type: Required value: must not be empty for specified object fields"],
                 id="missing-type"),
    pytest.param({"type": "string"}, ['s.type: Invalid value: "string": must be object at the root'], id="root"),
    pytest.param({"type": "object", "properties": {"a": {"type": "array"}}},
                 ["s.properties[a].items: Required value: must be specified"], id="array-without-items"),
    pytest.param({"type": "object", "properties": {"a": {"type": "strng"}}},
                 ['s.properties[a].type: Unsupported value: "strng": supported values: "object", "array", "string", '
                  '"integer", "number", "boolean"'], id="bad-type"),
    pytest.param({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
        "labels": {"type": "object"}}}}},
        ["s.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but "
         "metadata is implicitly specified"], id="metadata"),
    pytest.param({"type": "object", "properties": {"a": {"type": "integer", "default": "x"}}},
                 ['s.properties[a].default: Invalid value: "string": s.properties[a].default in body must be of '
                  'type integer: "x"'], id="invalid-default"),
    pytest.param({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}},
                 ['s.properties[a].pattern: Invalid value: "(": must be a valid regular expression'], id="pattern"),
    pytest.param({"type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}},
                 ['s.properties[a].pattern: Invalid value: "(a)\\\\1": must be a valid regular expression'],
                 id="backreference"),
    pytest.param({"type": "object", "anyOf": [{"type": "object", "required": ["a"]}]},
                 ["s.anyOf[0].type: Forbidden: must not be specified inside a value validation (allOf, anyOf, "
                  "oneOf, not)"], id="value-validation-type"),
])
def test_structural_schema_rules(node, expected):
    assert [e.message for e in schema.structural_errors(node, "s")] == expected


def test_a_catastrophic_pattern_matches_in_linear_time():
    """`(a+)+$` against a long run of a's and one b backtracks for ever in Python's re; RE2 answers at once."""
    node = {"type": "string", "pattern": "^(a+)+$"}
    start = time.monotonic()
    assert [e.detail for e in schema.validate("a" * 100_000 + "b", node, "x")] == ["x in body should match '^(a+)+$'"]
    assert time.monotonic() - start < 0.5


def test_any_of_and_one_of():
    node = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}], "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    assert schema.validate({"a": "x"}, node, "x") == []
    assert [e.detail for e in schema.validate({}, node, "x")] == ['"x" must validate at least one schema (anyOf)',
                                                                '"x" must validate one and only one schema (oneOf)']
    assert [e.detail for e in schema.validate({"a": "", "b": ""}, node, "x")] == [
        '"x" must validate one and only one schema (oneOf)']
