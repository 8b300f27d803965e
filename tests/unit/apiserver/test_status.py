"""Status bodies match upstream's wording, reasons and details, which clients switch on."""

from __future__ import annotations

import pytest

from control.apimachinery.validation import FieldError
from control.apiserver import status
from control.apiserver.codec.jsonwire import encode_json


@pytest.mark.parametrize(
    ("error", "code", "reason", "message", "details"),
    [
        pytest.param(status.not_found("pods", "web"), 404, "NotFound", 'pods "web" not found',
                     {"name": "web", "kind": "pods"}, id="not-found-core"),
        pytest.param(status.not_found("deployments", "web", group="apps"), 404, "NotFound",
                     'deployments.apps "web" not found', {"name": "web", "kind": "deployments", "group": "apps"},
                     id="not-found-group"),
        pytest.param(status.already_exists("services", "db"), 409, "AlreadyExists", 'services "db" already exists',
                     {"name": "db", "kind": "services"}, id="already-exists"),
        pytest.param(status.conflict("pods", "web", status.STALE_OBJECT), 409, "Conflict",
                     'Operation cannot be fulfilled on pods "web": the object has been modified; please apply '
                     "your changes to the latest version and try again", {"name": "web", "kind": "pods"},
                     id="conflict"),
        pytest.param(status.gone("too old resource version: 5 (10)"), 410, "Expired",
                     "too old resource version: 5 (10)", None, id="gone"),
        pytest.param(status.too_many_requests(1), 429, "TooManyRequests", "Too many requests, please try again later.",
                     {"retryAfterSeconds": 1}, id="throttled"),
    ],
)
def test_error_status_bodies(error, code, reason, message, details):
    body = error.status
    assert (body["kind"], body["apiVersion"], body["status"]) == ("Status", "v1", "Failure")
    assert (body["code"], body["reason"], body["message"], body.get("details")) == (code, reason, message, details)


def test_invalid_lists_every_field_error_as_a_cause():
    errors = [FieldError.required("spec.containers"), FieldError.invalid("metadata.name", "Web", "bad name")]
    body = status.invalid("Pod", "Web", errors).status
    assert body["code"] == 422 and body["reason"] == "Invalid"
    assert body["message"] == ('Pod "Web" is invalid: [spec.containers: Required value, '
                               'metadata.name: Invalid value: "Web": bad name]')
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.containers", "metadata.name"]
    assert body["details"]["kind"] == "Pod"


def test_invalid_with_one_error_has_no_brackets():
    body = status.invalid("Service", "db", [FieldError.required("spec.ports")]).status
    assert body["message"] == 'Service "db" is invalid: spec.ports: Required value'


def test_not_found_bytes_are_upstreams():
    """Byte for byte what a v1.30 server answered (captured with its Content-Length: 208): metav1.Status in Go's
    field order, details as name, group, kind, and the encoder's trailing newline."""
    body = encode_json(status.not_found("deployments", "web", group="apps").status)
    assert body == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps '
                    b'\\"web\\" not found","reason":"NotFound","details":{"name":"web","group":"apps","kind":'
                    b'"deployments"},"code":404}\n')
    assert len(body) == 208


def test_invalid_and_generic_bytes():
    body = encode_json(status.invalid("Ingress", "web", [FieldError.required("spec.rules")],
                                      group="networking.k8s.io").status)
    assert body == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Ingress.networking'
                    b'.k8s.io \\"web\\" is invalid: spec.rules: Required value","reason":"Invalid","details":{"name":'
                    b'"web","group":"networking.k8s.io","kind":"Ingress","causes":[{"reason":"FieldValueRequired",'
                    b'"message":"Required value","field":"spec.rules"}]},"code":422}\n')
    assert encode_json(status.route_not_found().status) == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find '
        b'the requested resource","reason":"NotFound","details":{},"code":404}\n')
    assert encode_json(status.bad_request("x").status).endswith(b'"reason":"BadRequest","code":400}\n')
    assert encode_json(status.internal_error("boom").status).endswith(
        b'"reason":"InternalError","details":{"causes":[{"message":"boom"}]},"code":500}\n')
    assert list(status.APIError(418, "", "teapot").status) == ["kind", "apiVersion", "metadata", "status", "message",
                                                               "code"]


def test_encode_json_escapes_as_go_does():
    assert encode_json({"m": "<a&b> é\u2028", "n": 1}) == b'{"m":"\\u003ca\\u0026b\\u003e \xc3\xa9\\u2028","n":1}\n'
    assert encode_json({"m": "\ud800"}) == b'{"m":"\\ud800"}\n'  # a lone surrogate stays escaped
