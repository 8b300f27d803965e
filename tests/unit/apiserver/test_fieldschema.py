"""The apply schema read from the table of upstream's API types: list and map semantics as upstream's OpenAPI
carries them, and agreement with the strategic merge patch's hand-kept table (one set of facts)."""

from __future__ import annotations

import pytest

from control.apiserver.fieldmanager import patch
from control.apiserver.fieldmanager.fieldschema import DEDUCED, Schema, Type, schema


def at(path: str, api_version: str = "v1", kind: str = "Pod") -> Type:
    s = schema()
    node = s.root(api_version, kind)
    for part in path.split("."):
        node = s.element(node) if part == "[]" else s.field(node, part)[0]
    return node


@pytest.mark.parametrize(
    ("path", "api_version", "kind", "list_type", "keys"),
    [
        pytest.param("spec.containers", "v1", "Pod", "map", ("name",), id="containers-by-name"),
        pytest.param("spec.containers.[].ports", "v1", "Pod", "map", ("containerPort", "protocol"),
                     id="ports-two-keys"),
        pytest.param("spec.ports", "v1", "Service", "map", ("port", "protocol"), id="service-ports"),
        pytest.param("metadata.finalizers", "v1", "ConfigMap", "set", (), id="finalizers-set"),
        pytest.param("metadata.ownerReferences", "v1", "ConfigMap", "map", ("uid",), id="owner-refs-by-uid"),
        pytest.param("spec.containers.[].command", "v1", "Pod", "atomic", (), id="command-atomic"),
        pytest.param("subsets", "v1", "Endpoints", "atomic", (), id="untagged-atomic"),
        pytest.param("spec.template.spec.volumes", "apps/v1", "Deployment", "map", ("name",), id="volumes"),
        pytest.param("status.conditions", "apps/v1", "Deployment", "map", ("type",), id="conditions-by-type"),
        pytest.param("status.conditions", "apiregistration.k8s.io/v1", "APIService", "map", ("type",),
                     id="kube-aggregator-markers"),
    ],
)
def test_list_semantics(path: str, api_version: str, kind: str, list_type: str, keys: tuple[str, ...]) -> None:
    node = at(path, api_version, kind)
    assert (node.shape, node.list_type, node.keys) == ("list", list_type, keys)


def test_structs_maps_and_atomic_types() -> None:
    assert at("spec.selector", "apps/v1", "Deployment").atomic  # +structType=atomic LabelSelector
    assert at("metadata.labels").shape == "map" and not at("metadata.labels").atomic
    assert at("spec.containers.[].resources.limits").shape == "map"
    assert at("spec.containers.[].image").shape == "scalar"
    assert at("spec.containers.[].ports.[].containerPort").shape == "scalar"
    assert at("spec.ports.[].targetPort", kind="Service").shape == "scalar"  # IntOrString
    assert at("spec.volumes.[].emptyDir").shape == "struct"  # inlined from the embedded VolumeSource
    assert schema().root("example.com/v1", "Widget") is DEDUCED


def test_zero_object_is_what_go_writes_for_an_empty_struct() -> None:
    assert schema().zero("apps/v1", "Deployment") == {
        "metadata": {"creationTimestamp": None},
        "spec": {"selector": None, "template": {"metadata": {"creationTimestamp": None}, "spec": {"containers": None}},
                 "strategy": {}},
        "status": {}}


def _walk_patch_table(s: Schema, type_name: str, node: Type, where: str, seen: list[str]) -> None:
    for key, field in patch.TYPES.get(type_name, {}).items():
        child = s.field(node, key)[0]
        if child.shape == "list":
            child_element = s.element(child)
            assert (child.patch_strategy, child.patch_merge_key) == (field.strategy, field.merge_key), f"{where}.{key}"
            if "merge" in field.strategy.split(",") and child.list_type != "atomic":  # hostIPs: +listType=atomic
                assert child.keys[:1] == ((field.merge_key,) if field.merge_key else ()), f"{where}.{key}"
            seen.append(f"{where}.{key}")
            if field.type:
                _walk_patch_table(s, field.type, child_element, f"{where}.{key}[]", seen)
        elif field.type:
            _walk_patch_table(s, field.type, child, f"{where}.{key}", seen)


def test_the_strategic_merge_table_agrees_with_the_upstream_markers() -> None:
    """Every list patch.py's table names has the same tags in upstream's types.go (as the table
    records them), and is keyed by the same
    field for apply unless upstream marks it otherwise (`+listType=atomic` on PodStatus.hostIPs)."""
    s = schema()
    seen: list[str] = []
    for kind, type_name in patch.KIND_TYPES.items():
        for (api_version, schema_kind), _ in s.kinds.items():
            if schema_kind == kind and not api_version.endswith("beta1"):
                _walk_patch_table(s, type_name, s.root(api_version, kind), kind, seen)
    assert "Pod.spec.containers" in seen and "Deployment.spec.template.spec.containers[].env" in seen
