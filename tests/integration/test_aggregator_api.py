"""The aggregation layer on the wire: a real API server on 127.0.0.1 proxies an APIService backed by a
Service (its Endpoints at a test HTTPS server with its own CA) — Available kept by the controller, the group in
`/apis` and in aggregated discovery, `kubectl get` of its resource through the aggregator, the user passed as
X-Remote-User/X-Remote-Group over the front proxy's client certificate, and the condition falling to False
when the backend goes away. Also an admission webhook reached through a `service` clientConfig."""

from __future__ import annotations

import base64
import os
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

from tests.support import webhook_certs, webhook_server
from tests.support.apiserver import Endpoint, free_port, running_server

GROUP, VERSION = "webhook-test.example.com", "v1"
APISERVICE = f"/apis/apiregistration.k8s.io/v1/apiservices/{VERSION}.{GROUP}"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Endpoint, str]]:
    data_dir = str(tmp_path_factory.mktemp("apiserver"))
    with running_server(data_dir) as endpoint:
        yield endpoint, data_dir


@pytest.fixture(scope="module")
def backend(api: tuple[Endpoint, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, bytes]]:
    """The test server behind Service default/agg, whose Endpoints name 127.0.0.1 (no controller runs here)."""
    endpoint, data_dir = api
    cert = webhook_certs.make(str(tmp_path_factory.mktemp("agg-tls")), dns=("agg.default.svc", "localhost"))
    port = free_port()
    server = webhook_server.serve(cert.cert, cert.key, port, host="127.0.0.1",
                                  client_ca=os.path.join(data_dir, "tls", "front-proxy-ca.crt"))
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "agg"},
               "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}}
    assert endpoint.request("POST", "/api/v1/namespaces/default/services", json=service).status_code == 201
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "agg"},
                 "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": port}]}]}
    assert endpoint.request("POST", "/api/v1/namespaces/default/endpoints", json=endpoints).status_code == 201
    yield port, cert.ca_pem()
    server.shutdown()


def available(endpoint: Endpoint, want: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        found = endpoint.request("GET", APISERVICE).json()
        condition = next((c for c in (found.get("status") or {}).get("conditions") or []
                          if c["type"] == "Available"), {})
        if condition.get("status") == want or time.monotonic() > deadline:
            return condition
        time.sleep(0.5)


def test_an_apiservice_backed_by_a_service_answers_through_the_aggregator(api, backend) -> None:
    endpoint, _ = api
    _, ca = backend
    body = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": f"{VERSION}.{GROUP}"},
            "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 1000, "versionPriority": 15,
                     "service": {"namespace": "default", "name": "agg"}, "caBundle": base64.b64encode(ca).decode()}}
    assert endpoint.request("POST", "/apis/apiregistration.k8s.io/v1/apiservices", json=body).status_code == 201
    condition = available(endpoint, "True")
    assert (condition.get("reason"), condition.get("message")) == ("Passed", "all checks passed"), condition
    groups = {g["name"]: g for g in endpoint.request("GET", "/apis").json()["groups"]}
    assert groups[GROUP]["preferredVersion"]["groupVersion"] == f"{GROUP}/{VERSION}"
    aggregated = endpoint.request("GET", "/apis", headers={"Accept": AGGREGATED}).json()
    entry = next(item for item in aggregated["items"] if item["metadata"]["name"] == GROUP)
    assert entry["versions"][0]["resources"][0]["resource"] == "things"
    listed = endpoint.request("GET", f"/apis/{GROUP}/{VERSION}/namespaces/default/things")
    assert listed.status_code == 200
    assert listed.json()["items"][0]["metadata"]["name"] == "served-by-the-aggregated-api"
    seen = webhook_server._Handler.seen_headers[-1]
    assert (seen["X-Remote-User"], seen["X-Remote-Group"], seen["peer-cn"]) == \
        ("system:admin", "system:masters,system:authenticated", "front-proxy-client")
    assert "Authorization" not in seen
    kubectl = subprocess.run(["kubectl", "--kubeconfig", endpoint.kubeconfig, "get", f"things.{GROUP}", "-n",
                              "default", "-o", "name"], capture_output=True, text=True, timeout=60)
    assert kubectl.returncode == 0, kubectl.stderr
    assert kubectl.stdout.strip() == f"thing.{GROUP}/served-by-the-aggregated-api"


def test_unavailable_when_the_service_goes(api, backend) -> None:
    endpoint, _ = api
    name = f"gone-{uuid.uuid4().hex[:6]}"
    body = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": f"v1.{name}.example"},
            "spec": {"group": f"{name}.example", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 15,
                     "service": {"namespace": "default", "name": name}, "insecureSkipTLSVerify": True}}
    assert endpoint.request("POST", "/apis/apiregistration.k8s.io/v1/apiservices", json=body).status_code == 201
    deadline = time.monotonic() + 20
    while True:
        found = endpoint.request("GET", f"/apis/apiregistration.k8s.io/v1/apiservices/v1.{name}.example").json()
        conditions = (found.get("status") or {}).get("conditions") or []
        if conditions or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert conditions[0]["status"] == "False"
    assert (conditions[0]["reason"], conditions[0]["message"]) == (
        "ServiceNotFound", f'service/{name} in "default" is not present')
    answer = endpoint.request("GET", f"/apis/{name}.example/v1/things")
    assert (answer.status_code, answer.json()["message"]) == (503, "service unavailable")


def test_a_webhook_through_its_service(api, backend) -> None:
    endpoint, _ = api
    _, ca = backend
    run = uuid.uuid4().hex[:8]
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": f"svc-{run}"},
            "webhooks": [{"name": "svc.webhook-test.example.com",
                          "clientConfig": {"service": {"namespace": "default", "name": "agg", "path": "/validate"},
                                           "caBundle": base64.b64encode(ca).decode()},
                          "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["configmaps"]}],
                          "objectSelector": {"matchLabels": {"run": run}},
                          "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}
    assert endpoint.request("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                            json=body).status_code == 201
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": f"cm-{run}", "labels": {"run": run, "webhook-test/deny": "yes"}}}
    refused = endpoint.request("POST", "/api/v1/namespaces/default/configmaps", json=cm)
    assert refused.status_code == 403
    assert refused.json()["message"] == ('admission webhook "svc.webhook-test.example.com" denied the request: '
                                         f"denied by the test webhook: cm-{run}")
