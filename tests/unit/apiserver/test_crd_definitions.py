"""CRD validation, naming, conditions and served versions (control/apiserver/apiextensions/definitions.py); the CEL
rules (cel.py) and the JSONPath of printer columns and scale paths (jsonpath.py)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from control.apiserver.apiextensions import cel, definitions, jsonpath
from control.apiserver.endpoints import tables
from control.apiserver.resources import by_path
from tests.support.crd_objects import WIDGET_SCHEMA, widget_crd

NOW = "2026-01-01T00:00:00Z"


def crd_messages(crd: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    definitions.defaults(crd)
    return [e.message for e in definitions.validate(crd, old)]


def changed(**edits: Any) -> dict[str, Any]:
    crd = widget_crd()
    for path, value in edits.items():
        target = crd
        *parents, last = path.split("__")
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if value is None:
            del target[last]
        else:
            target[last] = value
    return crd


@pytest.mark.parametrize(("crd", "expected"), [
    pytest.param(widget_crd(), [], id="valid"),
    pytest.param(changed(metadata__name="widget.example.com"),
                 ['metadata.name: Invalid value: "widget.example.com": must be spec.names.plural+"."+spec.group'],
                 id="name"),
    pytest.param(widget_crd(group="example"),
                 ['spec.group: Invalid value: "example": should be a domain with at least one dot'], id="group-dot"),
    pytest.param(changed(spec__scope="Global"),
                 ['spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"'], id="scope"),
    pytest.param(changed(spec__names__listKind="Widget"),
                 ['spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same or parsing '
                  'become ambiguous'], id="listKind"),
    pytest.param(changed(spec__names__plural="Widgets", metadata__name="Widgets.example.com"),
                 ['spec.names.plural: Invalid value: "Widgets": a DNS-1035 label must consist of lower case '
                  "alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric "
                  "character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
                  "'[a-z]([-a-z0-9]*[a-z0-9])?')"], id="plural"),
    pytest.param(changed(spec__versions__1__storage=True),
                 ['spec.versions: Invalid value: ["v1","v1beta1"]: must have exactly one version marked as storage '
                  "version"], id="two-storage"),
    pytest.param(changed(spec__versions__0__schema=None),
                 ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"], id="no-schema"),
    pytest.param(changed(spec__versions__0__subresources__scale={"specReplicasPath": ".status.replicas",
                                                                 "statusReplicasPath": ".status.replicas"}),
                 ['spec.versions[0].subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should '
                  "be a json path under .spec"], id="scale-path"),
    pytest.param(changed(spec__versions__0__additionalPrinterColumns=[{"name": "X", "type": "time",
                                                                       "jsonPath": ".spec.x"}]),
                 ['spec.versions[0].additionalPrinterColumns[0].type: Unsupported value: "time": supported values: '
                  '"boolean", "date", "integer", "number", "string"'], id="column-type"),
    pytest.param(changed(spec__conversion={"strategy": "Magic"}),
                 ['spec.conversion.strategy: Unsupported value: "Magic": supported values: "None", "Webhook"'],
                 id="strategy"),
    pytest.param(changed(spec__conversion={"strategy": "Webhook"}),
                 ["spec.conversion.webhook: Required value: required when strategy is set to Webhook"],
                 id="webhook without its config"),
    pytest.param(changed(spec__conversion={"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": "https://x.example.com/convert"}, "conversionReviewVersions": ["v2"]}}),
                 ['spec.conversion.webhook.conversionReviewVersions: Invalid value: ["v2"]: must include at least '
                  "one of v1, v1beta1"], id="review versions"),
])
def test_crd_validation(crd, expected):
    assert crd_messages(crd) == expected


def test_a_rule_that_does_not_compile_refuses_the_crd():
    crd = widget_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.replicas <="}]
    [message] = crd_messages(crd)
    assert message.startswith("spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]"
                              '.rule: Invalid value: "self.replicas <=": compilation failed: ')


def test_group_scope_and_plural_are_immutable():
    old = widget_crd()
    new = widget_crd(scope="Cluster")
    assert crd_messages(new, old) == ['spec.scope: Invalid value: "Cluster": field is immutable']


def test_defaults_fill_singular_and_list_kind():
    crd = widget_crd()
    del crd["spec"]["names"]["singular"]
    definitions.defaults(crd)
    assert crd["spec"]["names"]["singular"] == "widget"
    assert crd["spec"]["names"]["listKind"] == "WidgetList"
    assert crd["spec"]["conversion"] == {"strategy": "None"}


def test_names_accepted_and_established():
    crd = widget_crd()
    definitions.defaults(crd)
    status = definitions.desired_status(crd, [], now=NOW)
    assert status["acceptedNames"] == {"plural": "widgets", "singular": "widget", "shortNames": ["wd"],
                                       "kind": "Widget", "listKind": "WidgetList", "categories": ["all"]}
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("NamesAccepted", "True", "NoConflicts"), ("Established", "True", "InitialNamesAccepted")]
    assert status["storedVersions"] == ["v1"]


def test_a_name_another_crd_of_the_group_accepted_is_refused():
    first = widget_crd()
    definitions.defaults(first)
    first["status"] = definitions.desired_status(first, [], now=NOW)
    second = widget_crd(plural="gadgets", kind="Gadget")  # the same short name "wd"
    definitions.defaults(second)
    status = definitions.desired_status(second, [first], now=NOW)
    names, established = status["conditions"]
    assert (names["status"], names["reason"], names["message"]) == ("False", "ShortNamesConflict",
                                                                    '"wd" is already in use')
    assert (established["status"], established["reason"]) == ("False", "NotAccepted")
    assert not definitions.is_established({"status": status})
    other_group = widget_crd(group="other.io")
    definitions.defaults(other_group)
    assert definitions.desired_status(other_group, [first], now=NOW)["conditions"][0]["status"] == "True"


def test_condition_transition_time_moves_only_with_its_status():
    crd = widget_crd()
    definitions.defaults(crd)
    crd["status"] = definitions.desired_status(crd, [], now=NOW)
    again = definitions.desired_status(crd, [], now="2026-02-02T00:00:00Z")
    assert again == crd["status"]
    terminating = definitions.terminating_status(crd, reason="InstanceDeletionInProgress", message="m", now="later")
    assert terminating["conditions"][-1] == {"type": "Terminating", "status": "True", "message": "m",
                                             "reason": "InstanceDeletionInProgress", "lastTransitionTime": "later"}


def test_served_versions_in_priority_order_with_their_subresources():
    crd = widget_crd()
    crd["spec"]["versions"].append({"name": "v2alpha1", "served": False, "storage": False,
                                    "schema": {"openAPIV3Schema": {"type": "object"}}})
    definitions.defaults(crd)
    crd["status"] = definitions.desired_status(crd, [], now=NOW)
    v1, v1beta1 = definitions.served_versions(crd)
    assert (v1.resource.version, v1beta1.resource.version) == ("v1", "v1beta1")
    assert v1.resource.custom and v1.resource.namespaced and v1.resource.short_names == ("wd",)
    assert set(v1.resource.subresources) == {"status", "scale"} and not v1beta1.resource.subresources
    assert v1beta1.storage_api_version == "example.com/v1"
    assert [c.name for c in v1.columns] == ["Size", "Replicas", "Color", "Age"]
    assert v1beta1.columns == (definitions.AGE_COLUMN,)
    assert v1.scale == definitions.ScalePaths(".spec.replicas", ".status.replicas", ".status.selector")
    assert v1.list_kind == v1beta1.list_kind == "WidgetList"


@pytest.mark.parametrize(("names", "expected"), [
    (["v1", "v2", "v10"], ["v10", "v2", "v1"]),
    (["v1alpha1", "v1beta2", "v1", "v1beta1", "foo", "bar"], ["v1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"]),
])
def test_version_priority_is_kube_aware(names, expected):
    assert sorted(names, key=definitions.version_priority) == expected


# -- CEL ---------------------------------------------------------------------------------------------

def test_cel_rule_failure_uses_the_message_at_the_node():
    obj = {"spec": {"replicas": 5, "maxReplicas": 3}}
    [error] = cel.validate_object(obj, None, WIDGET_SCHEMA)
    assert error.message == 'spec: Invalid value: "object": replicas must not exceed maxReplicas'
    assert cel.validate_object({"spec": {"replicas": 2, "maxReplicas": 3}}, None, WIDGET_SCHEMA) == []


def test_cel_rule_without_message_and_field_path_and_reason():
    node = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "number"}},
            "x-kubernetes-validations": [{"rule": "self.a > 1"},
                                         {"rule": "self.b > 1.5", "fieldPath": ".b", "reason": "FieldValueForbidden",
                                          "messageExpression": "'b is ' + string(self.b)"}]}
    errors = cel.validate({"a": 1, "b": 1}, None, node, "spec")
    assert [e.message for e in errors] == ['spec: Invalid value: "object": failed rule: self.a > 1',
                                           "spec.b: Forbidden: b is 1.0"]


def test_transition_rules_run_only_on_update():
    node = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {
        "type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "size is immutable"}]}}}}}
    assert cel.validate_object({"spec": {"size": "a"}}, None, node) == []
    [error] = cel.validate_object({"spec": {"size": "b"}}, {"spec": {"size": "a"}}, node)
    assert error.message == 'spec.size: Invalid value: "string": size is immutable'
    assert cel.validate_object({"spec": {"size": "a"}}, {"spec": {"size": "a"}}, node) == []


def test_cel_evaluation_error_fails_the_rule():
    node = {"type": "object", "x-kubernetes-validations": [{"rule": "self.missing > 1"}]}
    [error] = cel.validate_object({"present": 1}, None, node)
    assert error.field == "<nil>" and "failed rule: self.missing > 1" in error.detail


# -- JSONPath and printer columns ----------------------------------------------------------------------

OBJ = {"metadata": {"name": "w", "creationTimestamp": "2026-01-01T00:00:00Z"},
       "spec": {"replicas": 3, "size": "small", "ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]},
       "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


@pytest.mark.parametrize(("path", "expected"), [
    (".spec.replicas", [3]),
    ("{.spec.size}", ["small"]),
    (".spec.ports[1].port", [2]),
    (".spec.ports[*].name", ["a", "b"]),
    (".status.conditions[?(@.type==\"Ready\")].status", ["True"]),
    (".spec['size']", ["small"]),
    (".spec.missing", []),
])
def test_jsonpath(path, expected):
    assert jsonpath.find(OBJ, path) == expected


def test_jsonpath_set_value_and_refusals():
    obj: dict[str, Any] = {}
    jsonpath.set_value(obj, ".spec.replicas", 4)
    assert obj == {"spec": {"replicas": 4}}
    with pytest.raises(ValueError):
        jsonpath.parse("spec.replicas")
    with pytest.raises(ValueError):
        jsonpath.set_value(obj, ".spec.ports[0]", 1)


def test_custom_printer_columns():
    columns = (definitions.Column("Size", "string", ".spec.size"), definitions.Column("Replicas", "integer",
                                                                                      ".spec.replicas"),
               definitions.Column("Ready", "string", '.status.conditions[?(@.type=="Ready")].status', priority=1),
               definitions.Column("Missing", "string", ".spec.nothing"),
               definitions.Column("Ports", "string", ".spec.ports"), definitions.AGE_COLUMN)
    from control.apiserver.crd.strategies import CustomResourceStrategy
    version = definitions.Version(by_path("", "v1", "configmaps"), "v1", columns=columns)  # any resource will do
    printer = tables.custom_printer(CustomResourceStrategy(version).printer_columns())
    assert [c.name for c in printer.columns] == ["Name", "Size", "Replicas", "Ready", "Missing", "Ports", "Age"]
    assert printer.columns[3].priority == 1
    now = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    assert printer.cells(OBJ, now) == ["w", "small", 3, "True", None,
                                       '[{"name":"a","port":1},{"name":"b","port":2}]', "5m"]


def test_table_of_custom_objects_uses_the_version_columns():
    from control.apiserver.crd.strategies import CustomResourceStrategy
    crd = widget_crd()
    definitions.defaults(crd)
    crd["status"] = definitions.desired_status(crd, [], now=NOW)
    v1 = definitions.served_versions(crd)[0]
    strategy = CustomResourceStrategy(v1)
    table = tables.table_for(v1.resource, [copy.deepcopy(OBJ)], now=datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC),
                             list_resource_version="7", printer=tables.printer_for(v1.resource, strategy))
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Replicas", "Color", "Age"]
    assert table["rows"][0]["cells"] == ["w", "small", 3, None, "30s"]
