"""Reading resource URLs, query parameters and bodies (request.py), and list/watch filters (selection.py)."""

from __future__ import annotations

import pytest
from multidict import MultiDict

from control.apimachinery.labels import SelectorError
from control.apiserver.endpoints import request as req
from control.apiserver.resources import ServedResources, by_path
from control.apiserver.status import APIError
from control.apiserver.storage.selection import parse_filter

PODS = by_path("", "v1", "pods")


@pytest.mark.parametrize("group,tail,expected", [
    pytest.param("", "pods", ("pods", "", "", ""), id="all-namespaces"),
    pytest.param("", "namespaces/a/pods", ("pods", "a", "", ""), id="namespaced-collection"),
    pytest.param("", "namespaces/a/pods/p/status", ("pods", "a", "p", "status"), id="subresource"),
    pytest.param("", "namespaces/a", ("namespaces", "", "a", ""), id="a-namespace"),
    pytest.param("", "namespaces/a/status", ("namespaces", "", "a", "status"), id="namespace-status"),
    pytest.param("", "namespaces/a/finalize", ("namespaces", "", "a", "finalize"), id="namespace-finalize"),
    pytest.param("", "nodes/n1/status", ("nodes", "", "n1", "status"), id="cluster-scoped"),
    pytest.param("apps", "namespaces/a/deployments/d/scale", ("deployments", "a", "d", "scale"), id="apps-scale"),
])
def test_parse_target(group, tail, expected):
    version = "v1"
    target = req.parse_target(ServedResources(), group, version, tail)
    assert (target.resource.plural, target.namespace, target.name, target.subresource) == expected


@pytest.mark.parametrize("group,tail", [
    pytest.param("", "widgets", id="unknown-resource"),
    pytest.param("", "pods/p", id="namespaced-object-without-namespace"),
    pytest.param("", "namespaces/a/nodes", id="cluster-scoped-in-a-namespace"),
    pytest.param("", "namespaces/a/pods/p/bogus", id="unknown-subresource"),
    pytest.param("", "namespaces/a/pods/p/status/x", id="too-deep"),
    pytest.param("apps", "namespaces/a/pods", id="wrong-group"),
    pytest.param("", "namespaces/../pods", id="dot-dot"),
])
def test_unknown_paths_are_404(group, tail):
    with pytest.raises(APIError) as caught:
        req.parse_target(ServedResources(), group, "v1", tail)
    assert caught.value.code == 404


@pytest.mark.parametrize("query,code", [
    pytest.param({"limit": "x"}, 400, id="limit-not-a-number"),
    pytest.param({"limit": "-1"}, 400, id="limit-negative"),
])
def test_query_int_errors(query, code):
    with pytest.raises(APIError) as caught:
        req.query_int(query, "limit")
    assert caught.value.code == code


def test_resource_version_must_be_a_revision():
    assert req.resource_version({"resourceVersion": "42"}) == "42"
    assert req.resource_version({}) == ""
    with pytest.raises(APIError):
        req.resource_version({"resourceVersion": "abc"})


def test_dry_run_accepts_only_all():
    assert req.dry_run(MultiDict([("dryRun", "All")]))
    assert not req.dry_run(MultiDict())
    with pytest.raises(APIError):
        req.dry_run(MultiDict([("dryRun", "Some")]))


@pytest.mark.parametrize("data,content_type,code", [
    pytest.param(b"{", "application/json", 400, id="truncated-json"),
    pytest.param(b'{"a": NaN}', "application/json", 400, id="nan"),
    pytest.param(b"\xff", "application/json", 400, id="not-utf8"),
    pytest.param(b"a: [", "application/yaml", 400, id="bad-yaml"),
    pytest.param(b"{}", "text/html", 415, id="unknown-media-type"),
    pytest.param(b"[1]", "application/json", 400, id="not-an-object"),
])
def test_bad_bodies(data, content_type, code):
    with pytest.raises(APIError) as caught:
        req.decode_object(data, content_type)
    assert caught.value.code == code


def test_yaml_body():
    assert req.decode_object(b"metadata:\n  name: x\n", "application/yaml") == {"metadata": {"name": "x"}}


def test_delete_options_merge_body_and_query():
    options = req.delete_options({"gracePeriodSeconds": "5"}, {"propagationPolicy": "Foreground"})
    assert options["gracePeriodSeconds"] == 5 and options["propagationPolicy"] == "Foreground"
    assert req.delete_options({}, {"orphanDependents": True})["propagationPolicy"] == "Orphan"
    assert req.delete_options({}, {"orphanDependents": False})["propagationPolicy"] == "Background"
    with pytest.raises(APIError) as both:
        req.delete_options({}, {"orphanDependents": True, "propagationPolicy": "Orphan"})
    assert both.value.code == 422 and "cannot be both set" in both.value.message
    with pytest.raises(APIError) as caught:
        req.delete_options({"propagationPolicy": "Never"}, None)
    assert caught.value.code == 422


@pytest.mark.parametrize("labels,fields,obj,expected", [
    pytest.param("app=x", "", {"metadata": {"labels": {"app": "x"}}}, True, id="label-match"),
    pytest.param("app=x", "", {"metadata": {}}, False, id="label-miss"),
    pytest.param("", "spec.nodeName=n", {"spec": {"nodeName": "n"}}, True, id="node-name"),
    pytest.param("", "spec.nodeName=", {"spec": {}}, True, id="unscheduled"),
    pytest.param("", "status.phase!=Running", {"status": {"phase": "Pending"}}, True, id="phase"),
    pytest.param("", "spec.hostNetwork=false", {"spec": {}}, True, id="absent-bool-is-false"),
    pytest.param("", "metadata.namespace=a", {"metadata": {"namespace": "a"}}, True, id="namespace"),
])
def test_pod_filter(labels, fields, obj, expected):
    assert parse_filter(PODS, labels, fields).matches(obj) is expected


def test_event_involved_object_fields():
    events = by_path("", "v1", "events")
    flt = parse_filter(events, "", "involvedObject.name=p,involvedObject.uid=u,source=kubelet")
    assert flt.matches({"involvedObject": {"name": "p", "uid": "u"}, "source": {"component": "kubelet"}})
    assert not flt.matches({"involvedObject": {"name": "p", "uid": "other"}, "source": {"component": "kubelet"}})


def test_unsupported_field_is_an_error():
    with pytest.raises(SelectorError, match="field label not supported: spec.image"):
        parse_filter(PODS, "", "spec.image=x")
