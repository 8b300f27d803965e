"""Admission webhooks on the wire: a real API server on 127.0.0.1 calls an HTTPS webhook server (its own CA,
made with openssl) through `url` clientConfigs — refusals with the webhook's message, a JSONPatch label,
warnings as Warning headers, failurePolicy Ignore/Fail against a dead address, the 10 s default timeout
made short, dryRun against sideEffects, reinvocation, objectSelector and matchConditions."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Iterator

import pytest

from tests.support import webhook_certs, webhook_server
from tests.support.apiserver import Endpoint, free_port, running_server

VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
CMS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, bytes]]:
    cert = webhook_certs.make(str(tmp_path_factory.mktemp("webhook-tls")))
    port = free_port()
    server = webhook_server.serve(cert.cert, cert.key, port, host="127.0.0.1")
    yield port, cert.ca_pem()
    server.shutdown()


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("apiserver"))) as endpoint:
        yield endpoint


def hook(name: str, url: str, ca: bytes, **extra) -> dict:
    return {"name": name, "clientConfig": {"url": url, "caBundle": base64.b64encode(ca).decode()},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "objectSelector": {"matchLabels": {"webhook-test/run": extra.pop("run")}}, **extra}


@pytest.fixture
def configured(api: Endpoint) -> Iterator[list[tuple[str, str]]]:
    made: list[tuple[str, str]] = []
    yield made
    for collection, name in made:
        api.request("DELETE", f"{collection}/{name}")


def configure(api: Endpoint, made: list, collection: str, kind: str, *hooks: dict) -> None:
    name = f"test-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": list(hooks)}
    response = api.request("POST", collection, json=body)
    assert response.status_code == 201, response.text
    made.append((collection, name))


def configmap(run: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"cm-{uuid.uuid4().hex[:8]}", "labels": {"webhook-test/run": run, **labels}}}


def test_validating_webhook_refuses_with_its_message_and_warns(api: Endpoint, webhook, configured) -> None:
    port, ca = webhook
    run = uuid.uuid4().hex[:8]
    configure(api, configured, VWC, "ValidatingWebhookConfiguration",
              hook("deny.webhook-test.example.com", f"https://127.0.0.1:{port}/validate", ca, run=run))
    refused = configmap(run, **{"webhook-test/deny": "yes"})
    response = api.request("POST", CMS, json=refused)
    assert response.status_code == 403, response.text
    assert response.json()["message"] == ('admission webhook "deny.webhook-test.example.com" denied the request: '
                                          f'denied by the test webhook: {refused["metadata"]["name"]}')
    allowed = configmap(run)
    response = api.request("POST", CMS, json=allowed)
    assert response.status_code == 201, response.text
    assert response.headers["Warning"] == \
        f'299 - "webhook saw {allowed["metadata"]["name"]}"'
    other = api.request("POST", CMS, json=configmap("another-run", **{"webhook-test/deny": "yes"}))
    assert other.status_code == 201, "the objectSelector leaves other objects alone"


def test_mutating_webhook_adds_a_label_and_reinvocation(api: Endpoint, webhook, configured) -> None:
    port, ca = webhook
    run = uuid.uuid4().hex[:8]
    # configurations run in name order: "a-..." (mutate-again, IfNeeded) before "b-..." (mutate)
    for prefix, path, extra in (("b", "mutate", {}), ("a", "mutate-again", {"reinvocationPolicy": "IfNeeded"})):
        body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": f"{prefix}-{run}"},
                "webhooks": [hook(f"{path}.webhook-test.example.com", f"https://127.0.0.1:{port}/{path}", ca,
                                  run=run, **extra)]}
        assert api.request("POST", MWC, json=body).status_code == 201
        configured.append((MWC, f"{prefix}-{run}"))
    response = api.request("POST", CMS, json=configmap(run))
    assert response.status_code == 201, response.text
    labels = response.json()["metadata"]["labels"]
    assert labels["webhook-test/mutated"] == "yes"
    # reinvoked after the second webhook's change, the first one saw its label
    assert labels["webhook-test/second"] == "webhook-test.mutated_webhook-test.run"


@pytest.mark.parametrize(("policy", "code"), [pytest.param("Ignore", 201, id="Ignore"),
                                              pytest.param("Fail", 500, id="Fail")])
def test_failure_policy_on_a_dead_webhook(api: Endpoint, webhook, configured, policy: str, code: int) -> None:
    _, ca = webhook
    run = uuid.uuid4().hex[:8]
    dead = free_port()
    configure(api, configured, VWC, "ValidatingWebhookConfiguration",
              hook("dead.webhook-test.example.com", f"https://127.0.0.1:{dead}/validate", ca, run=run,
                   failurePolicy=policy))
    response = api.request("POST", CMS, json=configmap(run))
    assert response.status_code == code, response.text
    if code == 500:
        assert response.json()["message"] == (
            'Internal error occurred: failed calling webhook "dead.webhook-test.example.com": failed to call '
            f'webhook: Post "https://127.0.0.1:{dead}/validate?timeout=10s": connect: connection refused')


def test_timeout_garbage_and_an_unknown_ca_fail_the_call(api: Endpoint, webhook, configured) -> None:
    port, ca = webhook
    run = uuid.uuid4().hex[:8]
    configure(api, configured, VWC, "ValidatingWebhookConfiguration",
              hook("slow.webhook-test.example.com", f"https://127.0.0.1:{port}/slow", ca, run=run,
                   timeoutSeconds=1))
    message = api.request("POST", CMS, json=configmap(run)).json()["message"]
    assert message.endswith('/slow?timeout=1s": context deadline exceeded'), message
    run = uuid.uuid4().hex[:8]
    configure(api, configured, VWC, "ValidatingWebhookConfiguration",
              hook("garbage.webhook-test.example.com", f"https://127.0.0.1:{port}/garbage", ca, run=run))
    message = api.request("POST", CMS, json=configmap(run)).json()["message"]
    assert message.startswith('Internal error occurred: failed calling webhook "garbage.webhook-test.example.com": '
                              'failed to decode response'), message
    run = uuid.uuid4().hex[:8]
    other_ca = api.request("GET", "/cacerts").content or b""
    configure(api, configured, VWC, "ValidatingWebhookConfiguration",
              hook("wrong-ca.webhook-test.example.com", f"https://127.0.0.1:{port}/validate", other_ca, run=run))
    message = api.request("POST", CMS, json=configmap(run)).json()["message"]
    assert "tls: failed to verify certificate" in message, message


def test_dry_run_and_side_effects(api: Endpoint, webhook, configured) -> None:
    port, ca = webhook
    run = uuid.uuid4().hex[:8]
    configure(api, configured, VWC, "ValidatingWebhookConfiguration",
              hook("dry.webhook-test.example.com", f"https://127.0.0.1:{port}/validate", ca, run=run,
                   sideEffects="NoneOnDryRun"))
    response = api.request("POST", CMS + "?dryRun=All", json=configmap(run, **{"webhook-test/deny": "yes"}))
    assert response.status_code == 403, "a dry run still asks a webhook without side effects"


def test_match_conditions(api: Endpoint, webhook, configured) -> None:
    port, ca = webhook
    run = uuid.uuid4().hex[:8]
    conditions = [{"name": "only-named-keep", "expression": "object.metadata.name.startsWith('keep-')"}]
    configure(api, configured, VWC, "ValidatingWebhookConfiguration",
              hook("cel.webhook-test.example.com", f"https://127.0.0.1:{port}/validate", ca, run=run,
                   matchConditions=conditions))
    skipped = configmap(run, **{"webhook-test/deny": "yes"})
    assert api.request("POST", CMS, json=skipped).status_code == 201
    asked = configmap(run, **{"webhook-test/deny": "yes"})
    asked["metadata"]["name"] = "keep-" + asked["metadata"]["name"]
    assert api.request("POST", CMS, json=asked).status_code == 403


def crd(url: str, ca: bytes, plural: str) -> dict:
    def version(name: str, storage: bool, properties: dict) -> dict:
        return {"name": name, "served": True, "storage": storage,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": properties}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural[:-1], "kind": plural.capitalize()[:-1]},
                     "versions": [version("v1", True, {"host": {"type": "string"}, "port": {"type": "integer"}}),
                                  version("v2", False, {"address": {"type": "string"}})],
                     "conversion": {"strategy": "Webhook", "webhook": {
                         "conversionReviewVersions": ["v1"],
                         "clientConfig": {"url": url, "caBundle": base64.b64encode(ca).decode()}}}}}


def wait_served(api: Endpoint, path: str) -> None:
    deadline = time.monotonic() + 20
    while api.request("GET", path).status_code != 200:
        assert time.monotonic() < deadline, "the CRD was never served"
        time.sleep(0.2)


def test_crd_conversion_webhook(api: Endpoint, webhook) -> None:
    port, ca = webhook
    plural = f"backends{uuid.uuid4().hex[:6]}"
    response = api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                           json=crd(f"https://127.0.0.1:{port}/convert", ca, plural))
    assert response.status_code == 201, response.text
    v1 = f"/apis/stable.example.com/v1/namespaces/default/{plural}"
    v2 = f"/apis/stable.example.com/v2/namespaces/default/{plural}"
    wait_served(api, v2)
    kind = plural.capitalize()[:-1]
    body = {"apiVersion": "stable.example.com/v2", "kind": kind, "metadata": {"name": "one"},
            "spec": {"address": "db.example.com:5432"}}
    created = api.request("POST", v2, json=body)
    assert created.status_code == 201, created.text
    assert created.json()["spec"] == {"address": "db.example.com:5432"}
    stored = api.request("GET", f"{v1}/one").json()
    assert (stored["apiVersion"], stored["spec"]) == ("stable.example.com/v1", {"host": "db.example.com", "port": 5432})
    listed = api.request("GET", v2).json()
    assert listed["items"][0]["spec"] == {"address": "db.example.com:5432"}


def test_a_conversion_webhook_that_fails(api: Endpoint, webhook) -> None:
    _, ca = webhook
    plural = f"broken{uuid.uuid4().hex[:6]}s"
    dead = free_port()
    assert api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                       json=crd(f"https://127.0.0.1:{dead}/convert", ca, plural)).status_code == 201
    v2 = f"/apis/stable.example.com/v2/namespaces/default/{plural}"
    wait_served(api, v2)
    kind = plural.capitalize()[:-1]
    refused = api.request("POST", v2, json={"apiVersion": "stable.example.com/v2", "kind": kind,
                                            "metadata": {"name": "one"}, "spec": {"address": "a:1"}})
    assert refused.status_code == 500
    assert refused.json()["message"] == (
        f"Internal error occurred: conversion webhook for stable.example.com/v2, Kind={kind} failed: "
        f'Post "https://127.0.0.1:{dead}/convert?timeout=30s": connect: connection refused')
