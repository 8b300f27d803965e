"""End-to-end: kubectl 1.33's typed commands, which send protobuf bodies, against a real API server — each
succeeds, and stores the same object kubectl 1.31 (which sends the same object as JSON) stores for the
same command in a namespace of its own.

What is served decides what is tested: Role/RoleBinding/ClusterRole (rbac.authorization.k8s.io),
Ingress (networking.k8s.io), TokenRequest (`kubectl create token`) and HorizontalPodAutoscaler
(`kubectl autoscale`) are not served yet; their protobuf bodies are decoded in the unit tests
(tests/unit/apiserver/test_protobuf.py) from captured kubectl 1.33 bodies."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import unavailable
from tests.e2e.conftest import Kubectl
from tests.support.apiserver import Endpoint

PROTOBUF = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
JSON = "/usr/lib/google-cloud-sdk/bin/kubectl.1.31"
SENT_AS_PROTOBUF = "Content-Type: application/vnd.kubernetes.protobuf"


def client(binary: str, apiserver: Endpoint, cache: Path) -> Kubectl:
    if not os.access(binary, os.X_OK):
        unavailable(binary, "the machine image ships kubectl 1.27-1.33 under /usr/lib/google-cloud-sdk/bin")
    return Kubectl(binary, apiserver.kubeconfig, str(cache))


@pytest.fixture(scope="module")
def clients(apiserver: Endpoint, tmp_path_factory: pytest.TempPathFactory) -> tuple[Kubectl, Kubectl]:
    return (client(PROTOBUF, apiserver, tmp_path_factory.mktemp("kubectl133")),
            client(JSON, apiserver, tmp_path_factory.mktemp("kubectl131")))


@pytest.fixture(scope="module")
def namespaces(clients: tuple[Kubectl, Kubectl]) -> tuple[str, str]:
    """One namespace per client, made by that client (`create namespace` is itself a protobuf write)."""
    names = (f"pb-{uuid.uuid4().hex[:6]}", f"js-{uuid.uuid4().hex[:6]}")
    for kubectl, name in zip(clients, names, strict=True):
        kubectl.run("create", "namespace", name)
    return names


def stored(kubectl: Kubectl, namespace: str, resource: str) -> dict[str, Any]:
    return json.loads(kubectl.run("get", resource, "-n", namespace, "-o", "json").stdout)


def without_nulls(value: Any) -> Any:
    """A JSON client sends a zero metav1.Time as `creationTimestamp: null`; the protobuf decoder leaves it
    out: the same thing to every reader."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def comparable(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The object without what the server assigns per object (uid, resourceVersion, timestamps, a
    service's cluster IP and node ports, an owner's uid), with the namespace name blanked."""
    obj = without_nulls(json.loads(json.dumps(obj).replace(namespace, "NS").replace(obj["metadata"]["uid"], "UID")))
    obj.pop("status", None)
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
        obj["metadata"].pop(key, None)
    for owner in obj["metadata"].get("ownerReferences", []):
        owner.pop("uid")
    spec = obj.get("spec", {})
    for key in ("clusterIP", "clusterIPs"):
        spec.pop(key, None)
    for port in spec.get("ports", []) if obj["kind"] == "Service" else []:
        port.pop("nodePort", None)
    return obj


def run_both(clients: tuple[Kubectl, Kubectl], namespaces: tuple[str, str], *args: str) -> None:
    new, old = clients
    result = new.run("-n", namespaces[0], "-v=8", *args)  # flags first: a command may end in `-- args`
    if args[0] == "create":  # a typed create: kubectl 1.33 sends it as protobuf (expose and --from do not)
        assert SENT_AS_PROTOBUF in result.stderr
    old.run("-n", namespaces[1], *args)


def assert_same(clients: tuple[Kubectl, Kubectl], namespaces: tuple[str, str], resource: str) -> dict[str, Any]:
    from_protobuf, from_json = (comparable(stored(kubectl, ns, resource), ns)
                                for kubectl, ns in zip(clients, namespaces, strict=True))
    assert from_protobuf == from_json
    return from_protobuf


CASES = [
    pytest.param(("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2", "--port=80"),
                 "deployment/web", id="deployment"),
    pytest.param(("create", "service", "clusterip", "api", "--tcp=80:8080", "--tcp=443"), "service/api",
                 id="service-clusterip"),
    pytest.param(("create", "service", "nodeport", "np", "--tcp=80:8080"), "service/np", id="service-nodeport"),
    pytest.param(("create", "job", "once", "--image=busybox:1.36", "--", "echo", "hi"), "job/once", id="job"),
    pytest.param(("create", "cronjob", "tick", "--image=busybox:1.36", "--schedule=*/5 * * * *",
                  "--restart=OnFailure"), "cronjob/tick", id="cronjob"),
    pytest.param(("create", "serviceaccount", "robot"), "serviceaccount/robot", id="serviceaccount"),
    pytest.param(("create", "quota", "small", "--hard=pods=3,requests.cpu=500m,requests.memory=1Gi",
                  "--scopes=NotTerminating"), "resourcequota/small", id="quota"),
    pytest.param(("create", "secret", "generic", "creds", "--from-literal=user=admin", "--from-literal=pw=s3cr3t"),
                 "secret/creds", id="secret-generic"),
    pytest.param(("create", "secret", "docker-registry", "pull", "--docker-server=r.example",
                  "--docker-username=u", "--docker-password=p"), "secret/pull", id="secret-docker-registry"),
    pytest.param(("create", "configmap", "settings", "--from-literal=mode=fast"), "configmap/settings",
                 id="configmap"),
    pytest.param(("create", "poddisruptionbudget", "budget", "--selector=app=web", "--min-available=0"),
                 "poddisruptionbudget/budget", id="poddisruptionbudget"),
]


@pytest.mark.parametrize(("args", "resource"), CASES)
def test_typed_create_stores_what_the_json_client_stores(clients: tuple[Kubectl, Kubectl],
                                                         namespaces: tuple[str, str], args: tuple[str, ...],
                                                         resource: str) -> None:
    run_both(clients, namespaces, *args)
    assert_same(clients, namespaces, resource)


def test_deployment_spec_is_the_one_asked_for(clients: tuple[Kubectl, Kubectl], namespaces: tuple[str, str]) -> None:
    """Equal to the JSON client's is not enough if both were wrong: the fields the command sets are there."""
    spec = stored(clients[0], namespaces[0], "deployment/web")["spec"]
    assert spec["replicas"] == 2 and spec["selector"] == {"matchLabels": {"app": "web"}}
    assert spec["template"]["spec"]["containers"] == [{
        "name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80, "protocol": "TCP"}], "resources": {},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent"}]
    assert "paused" not in spec  # gogo-protobuf writes `paused: false`; JSON's omitempty drops it


def test_expose_and_create_job_from_cronjob(clients: tuple[Kubectl, Kubectl], namespaces: tuple[str, str]) -> None:
    """They send JSON even from 1.33, but start from objects the protobuf path created."""
    run_both(clients, namespaces, "expose", "deployment", "web", "--port=8080", "--target-port=80", "--name=web-x")
    service = assert_same(clients, namespaces, "service/web-x")
    assert service["spec"]["selector"] == {"app": "web"}
    run_both(clients, namespaces, "create", "job", "manual", "--from=cronjob/tick")
    job = assert_same(clients, namespaces, "job/manual")
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.36"


def test_served_kind_with_a_body_the_server_cannot_decode_is_415(apiserver: Endpoint) -> None:
    body = b"k8s\x00" + b"\x0a\x13\x0a\x0eexample.com/v1\x12\x01W"
    response = apiserver.request("POST", "/api/v1/namespaces/default/configmaps", data=body,
                                 headers={"Content-Type": "application/vnd.kubernetes.protobuf"})
    assert response.status_code == 415
    response = apiserver.request("POST", "/api/v1/namespaces/default/configmaps", data=b"k8s\x00\x0a\xff",
                                 headers={"Content-Type": "application/vnd.kubernetes.protobuf"})
    assert response.status_code == 400


def test_kubectl_reads_json_answers(clients: tuple[Kubectl, Kubectl], namespaces: tuple[str, str]) -> None:
    """kubectl lists JSON in its Accept header, so the answers stay JSON although the server can write
    protobuf (for clients that accept nothing else: tests/integration/test_apiserver_protobuf_answers.py)."""
    result = clients[0].run("-n", namespaces[0], "-v=8", "get", "deployments,serviceaccounts")
    assert "web" in result.stdout and "robot" in result.stdout
    answers = [line for line in result.stderr.splitlines() if "Content-Type:" in line and "Response" not in line]
    received = [line for line in answers if "application/json" in line or "protobuf" in line]
    assert received and all("application/json" in line for line in received), answers
