"""fieldValidation: pruning of unknown fields by upstream's schemas, duplicate keys, and what Ignore, Warn and
Strict make of them — alone, and through the registry as a request runs it (context variable set)."""

from __future__ import annotations

import contextvars

import pytest

from control.apiserver import warning
from control.apiserver.codec import fieldvalidation
from control.apiserver.codec.fieldvalidation import Directive, Validation
from control.apiserver.endpoints import request
from control.apiserver.openapi import spec as openapi
from control.apiserver.registry.store import Registry
from control.apiserver.resources import by_path
from control.apiserver.status import APIError
from control.storage.sqlite import SQLiteStorage

DOCUMENTS = openapi.OpenAPIDocuments()
DEFINITIONS = DOCUMENTS.definitions()
PODS = by_path("", "v1", "pods")
CONFIGMAPS = by_path("", "v1", "configmaps")
NAMESPACES = by_path("", "v1", "namespaces")


def pod(**spec_extra):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"any": "label"}},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}],
                     **spec_extra}}


@pytest.mark.parametrize(("obj", "unknown", "kept"), [
    pytest.param(pod(), [], pod(), id="nothing-unknown"),
    pytest.param(pod(foo=1), ["spec.foo"], pod(), id="spec-field"),
    pytest.param({**pod(), "extra": {"a": 1}}, ["extra"], pod(), id="top-level"),
    pytest.param({"kind": "Pod", "metadata": {"name": "p", "nmae": "x"}}, ["metadata.nmae"],
                 {"kind": "Pod", "metadata": {"name": "p"}}, id="metadata"),
    pytest.param({"spec": {"containers": [{"name": "a"}, {"name": "b", "imagee": "x"}]}},
                 ["spec.containers[1].imagee"], {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}},
                 id="list-item-index"),
], )
def test_prune(obj, unknown, kept):
    assert fieldvalidation.prune(obj, DEFINITIONS["io.k8s.api.core.v1.Pod"], DEFINITIONS) == unknown
    assert obj == kept


def test_maps_opaque_objects_and_preserved_fields_keep_everything():
    managed = {"metadata": {"name": "p", "annotations": {"a": "b"},
                            "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {"f:x": {}}}}]}}
    assert fieldvalidation.prune(managed, DEFINITIONS["io.k8s.api.core.v1.Pod"], DEFINITIONS) == []
    assert managed["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {"f:x": {}}}
    schema = {"type": "object", "properties": {"free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                               "strict": {"type": "object", "properties": {}}}}
    obj = {"free": {"anything": 1}, "strict": {"gone": 1}}
    assert fieldvalidation.prune(obj, schema, {}) == ["strict.gone"]
    assert obj == {"free": {"anything": 1}, "strict": {}}


@pytest.mark.parametrize(("text", "duplicates"), [
    ('{"a": 1, "b": 2}', []),
    ('{"metadata": {"name": "x", "name": "y"}, "kind": "Pod"}', ["metadata.name"]),
    ('{"a": 1, "a": 2, "l": [{"k": 1, "k": 2}]}', ["a", "l[0].k"]),
    ("not json", []),
])
def test_duplicate_keys(text, duplicates):
    assert fieldvalidation.duplicate_keys(text) == duplicates


def test_directives():
    assert fieldvalidation.parse_directive(None) is Directive.WARN  # upstream's default since 1.23
    assert fieldvalidation.parse_directive("Strict") is Directive.STRICT
    with pytest.raises(APIError) as caught:
        fieldvalidation.parse_directive("strict", options_kind="PatchOptions")
    assert caught.value.code == 422
    assert caught.value.status["message"] == ('PatchOptions.meta.k8s.io "" is invalid: fieldValidation: '
                                                'Unsupported value: "strict": supported values: "Ignore", '
                                                '"Strict", "Warn"')


def test_report_under_each_directive():
    strict = Validation(Directive.STRICT, DOCUMENTS, decode_errors=['duplicate field "metadata.name"'])
    with pytest.raises(APIError) as caught:
        strict.report("Pod", "v1", ["spec.foo"])
    assert caught.value.code == 400 and caught.value.reason == "BadRequest"
    assert caught.value.status["message"] == ('Pod in version "v1" cannot be handled as a Pod: strict decoding '
                                                'error: duplicate field "metadata.name", unknown field "spec.foo"')
    patch = Validation(Directive.STRICT, DOCUMENTS, patch=True)
    with pytest.raises(APIError) as caught:
        patch.report("Pod", "v1", ["spec.foo"])
    assert caught.value.status["message"] == 'strict decoding error: unknown field "spec.foo"'
    warn = Validation(Directive.WARN, DOCUMENTS)
    warn.report("Pod", "v1", ["spec.foo", "spec.bar"])
    warn.report("Pod", "v1", ["spec.foo"])  # a patch retried: said once
    assert list(warn.warnings) == ['unknown field "spec.foo"', 'unknown field "spec.bar"']
    ignore = Validation(Directive.IGNORE, DOCUMENTS)
    ignore.report("Pod", "v1", ["spec.foo"])
    assert not ignore.warnings
    assert warning.header('unknown field "spec.foo"') == '299 - "unknown field \\"spec.foo\\""'


def in_request(validation: Validation, call, *args, **kwargs):
    """Run `call` as the middleware would: with the request's Validation in the context."""
    def run():
        fieldvalidation._current.set(validation)
        return call(*args, **kwargs)
    return contextvars.copy_context().run(run)


@pytest.fixture
def registry(tmp_path):
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    registry = Registry(storage)
    registry.create(NAMESPACES, "", {"metadata": {"name": "ns"}})
    yield registry
    storage.close()


def test_registry_prunes_before_storing_and_warns(registry):
    warn = Validation(Directive.WARN, DOCUMENTS)
    body = request.decode_object(b'{"kind": "ConfigMap", "metadata": {"name": "c", "name": "c"}, "data": {"a": "1"}, '
                                 b'"dta": {"b": "2"}}', "application/json")
    assert fieldvalidation.duplicate_keys('{"metadata": {"name": "c", "name": "c"}}') == ["metadata.name"]
    warn.decode_errors = ['duplicate field "metadata.name"']
    created = in_request(warn, registry.create, CONFIGMAPS, "ns", body)
    assert "dta" not in created and created["data"] == {"a": "1"}
    assert "dta" not in registry.must_get(CONFIGMAPS, "ns", "c")
    assert list(warn.warnings) == ['duplicate field "metadata.name"', 'unknown field "dta"']


def test_registry_strict_refuses_create_and_patch_and_stores_nothing(registry):
    with pytest.raises(APIError) as caught:
        in_request(Validation(Directive.STRICT, DOCUMENTS), registry.create, PODS, "ns", pod(foo=1))
    assert caught.value.code == 400 and 'unknown field "spec.foo"' in caught.value.status["message"]
    assert registry.get(PODS, "ns", "p") is None
    registry.create(CONFIGMAPS, "ns", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    with pytest.raises(APIError) as caught:
        in_request(Validation(Directive.STRICT, DOCUMENTS, patch=True), registry.patch, CONFIGMAPS, "ns", "c",
                   "merge", {"data": {"a": "2"}, "bogus": True})
    assert caught.value.status["message"] == 'strict decoding error: unknown field "bogus"'
    assert registry.must_get(CONFIGMAPS, "ns", "c")["data"] == {"a": "1"}
    ignored = Validation(Directive.IGNORE, DOCUMENTS, patch=True)
    patched = in_request(ignored, registry.patch, CONFIGMAPS, "ns", "c", "merge", {"data": {"a": "2"}, "bogus": True})
    assert patched["data"] == {"a": "2"} and "bogus" not in patched and not ignored.warnings


def test_writes_without_a_request_are_not_pruned(registry):
    """Bootstrap and tests that call the registry directly: no request, no directive, nothing dropped."""
    created = registry.create(CONFIGMAPS, "ns", {"metadata": {"name": "d"}, "extra": 1})
    assert created["extra"] == 1


def test_decode_reports_json_duplicates_to_the_request():
    validation = Validation(Directive.WARN, DOCUMENTS)
    in_request(validation, request.decode_object, b'{"kind": "Pod", "kind": "Pod"}', "application/json")
    assert validation.decode_errors == ['duplicate field "kind"']
    in_yaml = Validation(Directive.WARN, DOCUMENTS)
    in_request(in_yaml, request.decode_object, b"kind: Pod\nmetadata:\n  name: a\n  name: b\nkind: Pod\n",
               "application/yaml")
    assert in_yaml.decode_errors == ['yaml: unmarshal errors:\n  line 4: key "name" already set in map\n'
                                     '  line 5: key "kind" already set in map']
    ignored = Validation(Directive.IGNORE, DOCUMENTS)
    in_request(ignored, request.decode_object, b'{"kind": "Pod", "kind": "Pod"}', "application/json")
    assert ignored.decode_errors == []
