"""Request attributes as upstream's RequestInfoFactory derives them (cases of
k8s.io/apiserver/pkg/endpoints/request/requestinfo_test.go)."""

from __future__ import annotations

import pytest

from control.apiserver.authentication.tokens import UserInfo
from control.apiserver.authorization.attributes import request_attributes

ALICE = UserInfo("alice")


@pytest.mark.parametrize(("method", "path", "query", "verb", "namespace", "group", "resource", "subresource", "name"), [
    pytest.param("GET", "/api/v1/namespaces", {}, "list", "", "", "namespaces", "", "", id="list-namespaces"),
    pytest.param("GET", "/api/v1/namespaces/other", {}, "get", "other", "", "namespaces", "", "other",
                 id="namespace-object-carries-its-namespace"),
    pytest.param("GET", "/api/v1/namespaces/other/pods", {}, "list", "other", "", "pods", "", "", id="list"),
    pytest.param("GET", "/api/v1/namespaces/other/pods/foo", {}, "get", "other", "", "pods", "", "foo", id="get"),
    pytest.param("HEAD", "/api/v1/namespaces/other/pods/foo", {}, "get", "other", "", "pods", "", "foo", id="head"),
    pytest.param("GET", "/api/v1/pods", {}, "list", "", "", "pods", "", "", id="all-namespaces"),
    pytest.param("GET", "/api/v1/namespaces/other/pods/foo/log", {}, "get", "other", "", "pods", "log", "foo",
                 id="subresource"),
    pytest.param("GET", "/api/v1/watch/pods", {}, "watch", "", "", "pods", "", "", id="legacy-watch-prefix"),
    pytest.param("GET", "/api/v1/watch/namespaces/other/pods", {}, "watch", "other", "", "pods", "", "",
                 id="legacy-watch-namespaced"),
    pytest.param("GET", "/api/v1/pods", {"watch": "true"}, "watch", "", "", "pods", "", "", id="watch-param"),
    pytest.param("GET", "/api/v1/pods", {"watch": "1"}, "watch", "", "", "pods", "", "", id="watch-1"),
    pytest.param("GET", "/api/v1/pods", {"watch": "false"}, "list", "", "", "pods", "", "", id="watch-false"),
    pytest.param("GET", "/api/v1/namespaces/other/pods", {"fieldSelector": "metadata.name=foo"}, "list", "other", "",
                 "pods", "", "foo", id="field-selector-names-object"),
    pytest.param("GET", "/api/v1/namespaces/other/pods", {"fieldSelector": "metadata.name=foo", "watch": "true"},
                 "watch", "other", "", "pods", "", "foo", id="watch-one-object"),
    pytest.param("POST", "/api/v1/namespaces/other/pods", {}, "create", "other", "", "pods", "", "", id="create"),
    pytest.param("PUT", "/api/v1/namespaces/other/pods/foo", {}, "update", "other", "", "pods", "", "foo",
                 id="update"),
    pytest.param("PATCH", "/api/v1/namespaces/other/pods/foo", {}, "patch", "other", "", "pods", "", "foo",
                 id="patch"),
    pytest.param("DELETE", "/api/v1/namespaces/other/pods/foo", {}, "delete", "other", "", "pods", "", "foo",
                 id="delete"),
    pytest.param("DELETE", "/api/v1/namespaces/other/pods", {}, "deletecollection", "other", "", "pods", "", "",
                 id="deletecollection"),
    pytest.param("GET", "/apis/apps/v1/namespaces/other/deployments/web/scale", {}, "get", "other", "apps",
                 "deployments", "scale", "web", id="named-group"),
    pytest.param("PUT", "/api/v1/namespaces/other/finalize", {}, "update", "other", "", "namespaces", "finalize",
                 "other", id="namespace-finalize"),
    pytest.param("GET", "/api/v1/namespaces/other/status", {}, "get", "other", "", "namespaces", "status", "other",
                 id="namespace-status"),
])
def test_resource_requests(method, path, query, verb, namespace, group, resource, subresource, name):
    attributes = request_attributes(ALICE, method, path, query)
    assert attributes.resource_request
    assert (attributes.verb, attributes.namespace, attributes.api_group, attributes.resource,
            attributes.subresource, attributes.name) == (verb, namespace, group, resource, subresource, name)


@pytest.mark.parametrize(("method", "path", "verb"), [
    pytest.param("GET", "/api", "get", id="api"),
    pytest.param("GET", "/api/v1", "get", id="core-version"),
    pytest.param("GET", "/apis/apps/v1", "get", id="group-version"),
    pytest.param("GET", "/apis/apps", "get", id="group"),
    pytest.param("GET", "/healthz", "get", id="healthz"),
    pytest.param("POST", "/logs/x", "post", id="method-lower-case"),
])
def test_non_resource_requests(method, path, verb):
    attributes = request_attributes(ALICE, method, path, {})
    assert not attributes.resource_request
    assert (attributes.verb, attributes.path) == (verb, path)
