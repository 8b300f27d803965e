"""The PATCH engines give the results upstream gives: the RFC appendix examples for JSON patch and JSON
merge patch, and the strategic merge patches kubectl sends (apply, edit, patch) for built-in kinds."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from control.apiserver.fieldmanager.patch import (
    PATCH_CONTENT_TYPES,
    PatchError,
    json_merge_patch,
    json_patch,
    strategic_merge_patch,
)

# --- RFC 7386 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [
        pytest.param({"a": "b"}, {"a": "c"}, {"a": "c"}, id="replace-member"),
        pytest.param({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}, id="add-member"),
        pytest.param({"a": "b"}, {"a": None}, {}, id="delete-member"),
        pytest.param({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}, id="delete-one-of-two"),
        pytest.param({"a": ["b"]}, {"a": "c"}, {"a": "c"}, id="array-to-string"),
        pytest.param({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}, id="string-to-array"),
        pytest.param({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}, id="nested"),
        pytest.param({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}, id="arrays-replaced"),
        pytest.param(["a", "b"], ["c", "d"], ["c", "d"], id="array-document"),
        pytest.param({"a": "b"}, ["c"], ["c"], id="array-patch"),
        pytest.param({"a": "foo"}, None, None, id="null-patch"),
        pytest.param({"a": "foo"}, "bar", "bar", id="string-patch"),
        pytest.param({"e": None}, {"a": 1}, {"e": None, "a": 1}, id="target-null-kept"),
        pytest.param([1, 2], {"a": "b", "c": None}, {"a": "b"}, id="array-target-object-patch"),
        pytest.param({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}, id="nested-null-in-new-member"),
    ],
)
def test_json_merge_patch_rfc7386_appendix(target, patch, result):
    assert json_merge_patch(target, patch) == result


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@given(target=_JSON)
def test_json_merge_patch_with_empty_patch_is_identity(target):
    expected = target if isinstance(target, dict) else {}
    assert json_merge_patch(target, {}) == expected


@given(target=_JSON, patch=_JSON)
def test_json_merge_patch_never_mutates_inputs(target, patch):
    target_before, patch_before = copy.deepcopy(target), copy.deepcopy(patch)
    result = json_merge_patch(target, patch)
    assert (target, patch) == (target_before, patch_before)
    if isinstance(result, dict | list):
        assert result is not target and result is not patch


def test_json_merge_patch_result_shares_nothing_with_inputs():
    target, patch = {"keep": {"x": 1}}, {"new": {"y": [1]}}
    result = json_merge_patch(target, patch)
    result["keep"]["x"] = 2
    result["new"]["y"].append(2)
    assert target == {"keep": {"x": 1}} and patch == {"new": {"y": [1]}}


# --- RFC 6902 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "operations", "result"),
    [
        pytest.param({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}],
                     {"baz": "qux", "foo": "bar"}, id="A.1-add-member"),
        pytest.param({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}],
                     {"foo": ["bar", "qux", "baz"]}, id="A.2-add-array-element"),
        pytest.param({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"},
                     id="A.3-remove-member"),
        pytest.param({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]},
                     id="A.4-remove-array-element"),
        pytest.param({"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}],
                     {"baz": "boo", "foo": "bar"}, id="A.5-replace"),
        pytest.param({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
                     [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
                     {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}, id="A.6-move"),
        pytest.param({"foo": ["all", "grass", "cows", "eat"]}, [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
                     {"foo": ["all", "cows", "eat", "grass"]}, id="A.7-move-array-element"),
        pytest.param({"baz": "qux", "foo": ["a", 2, "c"]},
                     [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
                     {"baz": "qux", "foo": ["a", 2, "c"]}, id="A.8-test"),
        pytest.param({"foo": "bar"}, [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
                     {"foo": "bar", "child": {"grandchild": {}}}, id="A.10-add-nested"),
        pytest.param({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
                     {"foo": "bar", "baz": "qux"}, id="A.11-unrecognized-members-ignored"),
        pytest.param({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10},
                     id="A.14-escape-order"),
        pytest.param({"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
                     {"foo": ["bar", ["abc", "def"]]}, id="A.16-append-array-value"),
        pytest.param({"a": {"b": 1}}, [{"op": "copy", "from": "/a", "path": "/c"}], {"a": {"b": 1}, "c": {"b": 1}},
                     id="copy"),
        pytest.param({"a": 1}, [{"op": "replace", "path": "", "value": [1]}], [1], id="replace-root"),
        pytest.param({"metadata": {"labels": {"app/name": "x"}}},
                     [{"op": "remove", "path": "/metadata/labels/app~1name"}], {"metadata": {"labels": {}}},
                     id="slash-escape-in-label-key"),
        pytest.param({"a": 1, "b": 2}, [{"op": "add", "path": "/a", "value": 3}], {"a": 3, "b": 2},
                     id="add-existing-member-replaces"),
        pytest.param({"a": [1, 2]}, [{"op": "add", "path": "/a/2", "value": 3}], {"a": [1, 2, 3]},
                     id="add-at-array-end-index"),
    ],
)
def test_json_patch_rfc6902_appendix(target, operations, result):
    assert json_patch(target, operations) == result


@pytest.mark.parametrize(
    ("target", "operations", "code"),
    [
        pytest.param({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], 422, id="A.9-test-fails"),
        pytest.param({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}], 422,
                     id="A.12-add-to-missing-parent"),
        pytest.param({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}], 422,
                     id="A.15-string-is-not-number"),
        pytest.param({"a": True}, [{"op": "test", "path": "/a", "value": 1}], 422, id="true-is-not-1"),
        pytest.param({"a": 1}, [{"op": "remove", "path": "/b"}], 422, id="remove-missing-member"),
        pytest.param({"a": 1}, [{"op": "replace", "path": "/b", "value": 2}], 422, id="replace-missing-member"),
        pytest.param({"a": [1]}, [{"op": "remove", "path": "/a/1"}], 422, id="remove-out-of-bounds"),
        pytest.param({"a": [1]}, [{"op": "add", "path": "/a/2", "value": 3}], 422, id="add-past-end"),
        pytest.param({"a": [1]}, [{"op": "add", "path": "/a/01", "value": 3}], 422, id="leading-zero-index"),
        pytest.param({"a": {"b": {}}}, [{"op": "move", "from": "/a", "path": "/a/b/c"}], 422,
                     id="move-into-own-child"),
        pytest.param({"a": 1}, {"op": "add", "path": "/b", "value": 1}, 400, id="not-a-list"),
        pytest.param({"a": 1}, ["add"], 400, id="operation-not-an-object"),
        pytest.param({"a": 1}, [{"op": "frobnicate", "path": "/a"}], 400, id="unknown-op"),
        pytest.param({"a": 1}, [{"op": "add", "value": 1}], 400, id="missing-path"),
        pytest.param({"a": 1}, [{"op": "add", "path": "/b"}], 400, id="missing-value"),
        pytest.param({"a": 1}, [{"op": "move", "path": "/b"}], 400, id="missing-from"),
        pytest.param({"a": 1}, [{"op": "add", "path": "b", "value": 1}], 400, id="pointer-without-slash"),
    ],
)
def test_json_patch_errors(target, operations, code):
    before = copy.deepcopy(target)
    with pytest.raises(PatchError) as caught:
        json_patch(target, operations)
    assert caught.value.code == code
    assert target == before


def test_json_patch_is_all_or_nothing_and_does_not_mutate():
    target = {"a": [1, 2], "b": {"c": 1}}
    ops = [{"op": "add", "path": "/a/-", "value": 3}, {"op": "test", "path": "/b/c", "value": 2}]
    with pytest.raises(PatchError):
        json_patch(target, ops)
    assert target == {"a": [1, 2], "b": {"c": 1}}
    value = {"x": 1}
    result = json_patch(target, [{"op": "add", "path": "/v", "value": value}])
    result["v"]["x"] = 2
    assert value == {"x": 1}


# --- strategic merge patch ---------------------------------------------------------------------------


def _pod(*containers, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web", "tier": "fe"}},
            "spec": {"containers": list(containers), **spec}}


_NGINX = {"name": "nginx", "image": "nginx:1.25", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
_SIDECAR = {"name": "sidecar", "image": "busybox", "ports": [{"containerPort": 80, "protocol": "TCP"}]}


def _deployment(replicas=1):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [copy.deepcopy(_NGINX), copy.deepcopy(_SIDECAR)]}}}}


@pytest.mark.parametrize(
    ("kind", "target", "patch", "result"),
    [
        pytest.param(
            "Deployment", _deployment(),
            {"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "nginx"}, {"name": "sidecar"}],
                "containers": [{"name": "sidecar", "image": "busybox:1.36"}]}}}},
            {**_deployment(), "spec": {**_deployment()["spec"], "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [_NGINX, {**_SIDECAR, "image": "busybox:1.36"}]}}}},
            id="apply-changes-one-image-with-set-element-order"),
        pytest.param(
            "Pod", _pod(_NGINX, _SIDECAR),
            {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "nginx"}]}},
            _pod(_SIDECAR, _NGINX), id="set-element-order-alone-reorders"),
        pytest.param(
            "Pod", _pod(_NGINX),
            {"spec": {"containers": [{"name": "nginx", "env": [{"name": "C", "value": "3"}]}]}},
            _pod({**_NGINX, "env": [{"name": "C", "value": "3"}, *_NGINX["env"]]}),
            id="add-env-var-goes-first-like-upstream"),
        pytest.param(
            "Pod", _pod(_NGINX),
            {"spec": {"containers": [{"name": "nginx", "$setElementOrder/env": [{"name": "A"}, {"name": "B"},
                                                                                {"name": "C"}],
                                      "env": [{"name": "C", "value": "3"}]}]}},
            _pod({**_NGINX, "env": [*_NGINX["env"], {"name": "C", "value": "3"}]}),
            id="add-env-var-at-end-with-set-element-order"),
        pytest.param(
            "Pod", _pod(_NGINX),
            {"spec": {"containers": [{"name": "nginx", "env": [{"name": "A", "value": "9"}]}]}},
            _pod({**_NGINX, "env": [{"name": "A", "value": "9"}, {"name": "B", "value": "2"}]}),
            id="change-env-var-keeps-position"),
        pytest.param(
            "Pod", _pod(_NGINX, _SIDECAR),
            {"spec": {"containers": [{"name": "nginx", "$patch": "delete"}]}},
            _pod(_SIDECAR), id="delete-container"),
        pytest.param(
            "Pod", _pod(_NGINX, _SIDECAR),
            {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}],
                      "containers": [{"name": "nginx", "$patch": "delete"}]}},
            _pod(_SIDECAR), id="apply-removes-container"),
        pytest.param(
            "Pod", _pod(_NGINX, _SIDECAR),
            {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}},
            _pod({"name": "only", "image": "x"}), id="replace-whole-list"),
        pytest.param(
            "Pod", _pod(_NGINX, tolerations=[{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]),
            {"spec": {"tolerations": [{"key": "c", "operator": "Exists"}]}},
            _pod(_NGINX, tolerations=[{"key": "c", "operator": "Exists"}]), id="tolerations-are-atomic"),
        pytest.param(
            "ConfigMap", {"metadata": {"name": "c", "finalizers": ["a/x", "b/y", "c/z"]}},
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b/y"]}},
            {"metadata": {"name": "c", "finalizers": ["a/x", "c/z"]}}, id="delete-from-primitive-list"),
        pytest.param(
            "ConfigMap", {"metadata": {"name": "c", "finalizers": ["a/x", "b/y"]}},
            {"metadata": {"finalizers": ["b/y", "c/z"]}},
            {"metadata": {"name": "c", "finalizers": ["a/x", "b/y", "c/z"]}}, id="primitive-merge-list-union"),
        pytest.param(
            "Pod", _pod(_NGINX, volumes=[{"name": "data", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}]),
            {"spec": {"volumes": [{"name": "data", "$retainKeys": ["configMap", "name"],
                                   "configMap": {"name": "cfg"}}]}},
            _pod(_NGINX, volumes=[{"name": "data", "configMap": {"name": "cfg"}}, {"name": "tmp", "emptyDir": {}}]),
            id="retain-keys-on-volume"),
        pytest.param(
            "Pod", _pod(_NGINX), {"metadata": {"labels": {"tier": None, "new": "x"}}},
            {**_pod(_NGINX), "metadata": {"name": "web", "labels": {"app": "web", "new": "x"}}},
            id="null-deletes-label"),
        pytest.param(
            "Pod", {"metadata": {"name": "p"}, "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]}},
            {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
            {"metadata": {"name": "p"}, "status": {"phase": "Running", "conditions": [
                {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}},
            id="pod-status-conditions-merge-by-type"),
        pytest.param(
            "Node", {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}},
            {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"},
                                       {"type": "MemoryPressure", "status": "False"}]}},
            {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"},
                                       {"type": "MemoryPressure", "status": "False"}]}},
            id="node-status-conditions"),
        pytest.param(
            "Service", {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]}},
            {"spec": {"ports": [{"port": 443, "nodePort": 30443}]}},
            {"spec": {"ports": [{"port": 80, "targetPort": 8080},
                                {"port": 443, "targetPort": 8443, "nodePort": 30443}]}},
            id="service-ports-merge-by-port"),
        pytest.param("Deployment", _deployment(1), {"spec": {"replicas": 3}}, _deployment(3), id="deployment-replicas"),
        pytest.param(
            "CronJob", {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [_NGINX]}}}}}},
            {"spec": {"jobTemplate": {"spec": {"template": {"spec": {
                "containers": [{"name": "nginx", "image": "n2"}]}}}}}},
            {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{**_NGINX, "image": "n2"}]}}}}}},
            id="cronjob-pod-template-is-pod-spec"),
        pytest.param(
            "Widget", {"spec": {"items": [{"name": "a", "v": 1}, {"name": "b", "v": 2}]}},
            {"spec": {"items": [{"name": "a", "v": 3}], "extra": {"x": 1}}},
            {"spec": {"items": [{"name": "a", "v": 3}], "extra": {"x": 1}}}, id="unknown-kind-lists-replaced"),
        pytest.param(
            "Pod", _pod(_NGINX, securityContext={"runAsUser": 1, "fsGroup": 2}),
            {"spec": {"securityContext": {"$patch": "replace", "runAsUser": 5}}},
            _pod(_NGINX, securityContext={"runAsUser": 5}), id="replace-map"),
        pytest.param(
            "Pod", _pod(_NGINX, securityContext={"runAsUser": 1}),
            {"spec": {"securityContext": {"$patch": "delete"}}},
            _pod(_NGINX, securityContext={}), id="delete-map-leaves-it-empty-like-upstream"),
        pytest.param(
            "Pod", _pod(_NGINX),
            {"spec": {"initContainers": [{"name": "init", "$setElementOrder/env": [{"name": "X"}],
                                          "env": [{"name": "X", "value": "1", "valueFrom": None}]}]}},
            _pod(_NGINX, initContainers=[{"name": "init", "env": [{"name": "X", "value": "1"}]}]),
            id="new-list-has-directives-and-nulls-stripped"),
        pytest.param(
            "Pod", _pod(_NGINX), {"spec": {"containers": [{"name": "nginx", "$patch": "merge", "image": "n3"}]}},
            _pod({**_NGINX, "image": "n3"}), id="explicit-merge-directive"),
    ],
)
def test_strategic_merge_patch(kind, target, patch, result):
    assert strategic_merge_patch(target, patch, kind=kind) == result


def _directive_keys(value):
    if isinstance(value, dict):
        return [k for k in value if k.startswith("$")] + [d for v in value.values() for d in _directive_keys(v)]
    if isinstance(value, list):
        return [d for v in value for d in _directive_keys(v)]
    return []


def test_strategic_merge_patch_never_mutates_inputs_and_strips_directives():
    target = _deployment()
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"], "finalizers": ["y"]},
             "spec": {"template": {"spec": {
                 "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "nginx"}],
                 "containers": [{"name": "nginx", "$setElementOrder/env": [{"name": "B"}, {"name": "A"}],
                                 "env": [{"name": "B", "value": "3"}]}],
                 "volumes": [{"name": "v", "$retainKeys": ["name", "emptyDir"], "emptyDir": {}}]}}}}
    target_before, patch_before = copy.deepcopy(target), copy.deepcopy(patch)
    result = strategic_merge_patch(target, patch, kind="Deployment")
    assert (target, patch) == (target_before, patch_before)
    assert _directive_keys(result) == []
    containers = result["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["sidecar", "nginx"]
    assert containers[1]["env"] == [{"name": "B", "value": "3"}, {"name": "A", "value": "1"}]
    assert result["metadata"]["finalizers"] == ["y"]


@pytest.mark.parametrize(
    ("kind", "target", "patch", "code", "message"),
    [
        pytest.param("Pod", _pod(_NGINX), {"spec": {"containers": [{"image": "x"}]}}, 422,
                     'map: {"image": "x"} does not contain declared merge key: name', id="missing-merge-key"),
        pytest.param("Pod", _pod(_NGINX), {"spec": {"containers": [{"$patch": "delete"}]}}, 422,
                     "does not contain declared merge key: name", id="delete-without-merge-key"),
        pytest.param("Pod", _pod(_NGINX), ["not", "an", "object"], 400, "must be a JSON object", id="not-an-object"),
        pytest.param("Pod", _pod(_NGINX), {"spec": {"$patch": "frob"}}, 400, "unknown patch type", id="bad-directive"),
        pytest.param("Pod", _pod(_NGINX), {"spec": {"$frob": 1}}, 400, "unknown strategic merge patch directive",
                     id="unknown-dollar-key"),
        pytest.param("Pod", _pod(_NGINX, volumes=[{"name": "v", "emptyDir": {}}]),
                     {"spec": {"volumes": [{"name": "v", "$retainKeys": ["name"], "hostPath": {"path": "/"}}]}},
                     400, "retainKeys", id="retain-keys-missing-patched-key"),
        pytest.param("Pod", _pod(_NGINX), {"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}}, 400,
                     "primitive list", id="delete-list-not-a-list"),
        pytest.param("ConfigMap", {"metadata": {"finalizers": ["a"]}}, {"metadata": {"finalizers": [["b"]]}}, 422,
                     "lists of lists", id="list-of-lists"),
    ],
)
def test_strategic_merge_patch_errors(kind, target, patch, code, message):
    with pytest.raises(PatchError) as caught:
        strategic_merge_patch(target, patch, kind=kind)
    assert caught.value.code == code
    assert message in str(caught.value)


def test_content_types_name_the_three_engines():
    assert PATCH_CONTENT_TYPES == {"application/json-patch+json": "json",
                                   "application/merge-patch+json": "merge",
                                   "application/strategic-merge-patch+json": "strategic"}
