"""Audit on the wire: a real API server with a policy file and a JSON-lines log writes upstream-shaped events
for a create (its Audit-Id header, objectRef, request and response objects at RequestResponse), for a
request refused by authorization (403, the forbid decision, the impersonated user) and for a write a
validating webhook annotated (its auditAnnotations as `<webhook>/<key>`)."""

from __future__ import annotations

import base64
import json
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import yaml

from control.apiserver.audit.backend import LogOptions
from tests.support import webhook_certs, webhook_server
from tests.support.apiserver import Endpoint, free_port, running_server

POLICY = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "None", "nonResourceURLs": ["/healthz*", "/readyz*", "/livez*"]},
        {"level": "RequestResponse", "resources": [{"group": "", "resources": ["configmaps"]}]},
        {"level": "Metadata"},
    ],
}
CMS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Endpoint, str]]:
    root = tmp_path_factory.mktemp("audit")
    policy = root / "policy.yaml"
    policy.write_text(yaml.safe_dump(POLICY))
    log_path = str(root / "logs" / "audit.log")
    with running_server(str(root / "data"), audit_policy_file=str(policy),
                        audit_log=LogOptions(log_path)) as endpoint:
        yield endpoint, log_path


def events_of(log_path: str, audit_id: str, *, stages: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        found = []
        if os.path.exists(log_path):
            with open(log_path, encoding="utf-8") as handle:
                found = [event for line in handle if (event := json.loads(line))["auditID"] == audit_id]
        if len(found) >= stages or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_a_create_is_logged_with_its_objects(audited: tuple[Endpoint, str]) -> None:
    api, log_path = audited
    name = f"cm-{uuid.uuid4().hex[:8]}"
    response = api.request("POST", CMS, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                              "data": {"k": "v"}}, headers={"User-Agent": "audit-test/1"})
    assert response.status_code == 201, response.text
    audit_id = response.headers["Audit-Id"]
    [event] = events_of(log_path, audit_id)
    assert event["kind"] == "Event" and event["apiVersion"] == "audit.k8s.io/v1"
    assert event["level"] == "RequestResponse" and event["stage"] == "ResponseComplete"
    assert event["verb"] == "create" and event["requestURI"] == CMS
    assert event["userAgent"] == "audit-test/1" and event["sourceIPs"] == ["127.0.0.1"]
    assert "system:masters" in event["user"]["groups"]
    assert event["objectRef"] == {"resource": "configmaps", "namespace": "default", "name": name, "apiVersion": "v1"}
    assert event["responseStatus"] == {"metadata": {}, "code": 201}
    assert event["requestObject"]["data"] == {"k": "v"}
    assert event["responseObject"]["metadata"]["uid"] == response.json()["metadata"]["uid"]
    assert event["annotations"]["authorization.k8s.io/decision"] == "allow"
    assert event["requestReceivedTimestamp"] <= event["stageTimestamp"]
    assert event["stageTimestamp"].endswith("Z") and len(event["stageTimestamp"]) == len("2026-01-02T03:04:05.000000Z")


def test_a_refused_request_is_logged_with_the_decision(audited: tuple[Endpoint, str]) -> None:
    api, log_path = audited
    response = api.request("GET", "/api/v1/namespaces/kube-system/secrets", headers={"Impersonate-User": "alice"})
    assert response.status_code == 403, response.text
    [event] = events_of(log_path, response.headers["Audit-Id"])
    assert event["level"] == "Metadata" and event["verb"] == "list"
    assert event["impersonatedUser"]["username"] == "alice"
    assert event["responseStatus"]["code"] == 403 and event["responseStatus"]["reason"] == "Forbidden"
    assert event["responseStatus"]["message"] == response.json()["message"]
    assert event["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert "requestObject" not in event and "responseObject" not in event


def test_health_probes_are_not_logged_but_carry_an_audit_id(audited: tuple[Endpoint, str]) -> None:
    api, log_path = audited
    response = api.request("GET", "/healthz", headers={"Audit-ID": "probe-id-1"})
    assert response.headers["Audit-Id"] == "probe-id-1"
    assert events_of(log_path, "probe-id-1", timeout=0.5) == []


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, bytes]]:
    cert = webhook_certs.make(str(tmp_path_factory.mktemp("webhook-tls")))
    port = free_port()
    server = webhook_server.serve(cert.cert, cert.key, port, host="127.0.0.1")
    yield port, cert.ca_pem()
    server.shutdown()


def test_a_webhooks_audit_annotation_is_logged(audited: tuple[Endpoint, str], webhook: tuple[int, bytes]) -> None:
    api, log_path = audited
    port, ca = webhook
    run, config = uuid.uuid4().hex[:8], f"audit-{uuid.uuid4().hex[:8]}"
    vwc = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    hook = {"name": "seen.audit-test.example.com",
            "clientConfig": {"url": f"https://127.0.0.1:{port}/validate", "caBundle": base64.b64encode(ca).decode()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "objectSelector": {"matchLabels": {"audit-test/run": run}}}
    created = api.request("POST", vwc, json={"apiVersion": "admissionregistration.k8s.io/v1",
                                             "kind": "ValidatingWebhookConfiguration", "metadata": {"name": config},
                                             "webhooks": [hook]})
    assert created.status_code == 201, created.text
    try:
        name = f"cm-{uuid.uuid4().hex[:8]}"
        response = api.request("POST", CMS, json={"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": name, "labels": {"audit-test/run": run}}})
        assert response.status_code == 201, response.text
        [event] = events_of(log_path, response.headers["Audit-Id"])
        assert event["annotations"]["seen.audit-test.example.com/seen"] == name
    finally:
        api.request("DELETE", f"{vwc}/{config}")


def test_an_anonymous_public_request_is_logged_as_anonymous(audited: tuple[Endpoint, str]) -> None:
    api, log_path = audited
    response = requests.get(f"{api.url}/version", verify=api.verify, timeout=10)
    assert response.status_code == 200
    [event] = events_of(log_path, response.headers["Audit-Id"])
    assert event["user"] == {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
    assert event["verb"] == "get" and event["requestURI"] == "/version" and "objectRef" not in event
