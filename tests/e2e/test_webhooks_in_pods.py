"""Admission webhooks, a ValidatingAdmissionPolicy and an aggregated API end to end on the shared `up --nodes
3`, with the real kubectl 1.33.

The webhook server is tests/support/webhook_server.py run by `python3` in a pod (image slimkube/python:1,
the file from a ConfigMap, its certificate from a Secret, both made here with their own CA by openssl)
behind the Service `hooks`; the API server reaches it through the Service's ClusterIP (`up` runs a
kube-proxy on its host). Checked: a validating webhook refuses a labelled ConfigMap with its message; a
mutating webhook adds a label; with the pod gone, `failurePolicy: Ignore` creates and `Fail` refuses; a
ValidatingAdmissionPolicy refuses a Deployment over 5 replicas; an APIService backed by the Service answers
`kubectl get` through the aggregator.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from control.client.errors import NotFound
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.shared_cluster import RunningCluster
from tests.support import webhook_certs, webhook_server
from tests.support.polling import wait_for

pytestmark = pytest.mark.timeout(300)
IMAGE = "slimkube/python:1"
GROUP = "webhook-test.example.com"
REGISTRATION = "/apis/admissionregistration.k8s.io/v1"


@pytest.fixture
def hooks(workload_cluster: RunningCluster, cluster_namespace: str, docker_api, tmp_path: Path) -> Iterator[bytes]:
    """The webhook server's pod and Service in the test's namespace; its CA. Cluster-scoped objects the test
    makes are removed at teardown through `made`."""
    assert docker_api.images(name=IMAGE), f"{IMAGE} is not built (slimkube images)"
    client, ns = workload_cluster.client, cluster_namespace
    cert = webhook_certs.make(str(tmp_path / "tls"), dns=(f"hooks.{ns}.svc",))
    read = lambda path: base64.b64encode(Path(path).read_bytes()).decode()  # noqa: E731
    client.create(f"/api/v1/namespaces/{ns}/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hook-tls"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": read(cert.cert), "tls.key": read(cert.key)}})
    client.create(f"/api/v1/namespaces/{ns}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hook-code"},
        "data": {"webhook_server.py": Path(webhook_server.__file__).read_text()}})
    client.create(f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hook", "labels": {"app": "hook"}},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
            "name": "hook", "image": IMAGE,
            "command": ["python3", "/code/webhook_server.py", "/tls/tls.crt", "/tls/tls.key", "8443"],
            "readinessProbe": {"tcpSocket": {"port": 8443}, "periodSeconds": 1},
            "volumeMounts": [{"name": "code", "mountPath": "/code"}, {"name": "tls", "mountPath": "/tls"}]}],
            "volumes": [{"name": "code", "configMap": {"name": "hook-code"}},
                        {"name": "tls", "secret": {"secretName": "hook-tls"}}]}})
    client.create(f"/api/v1/namespaces/{ns}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks"},
        "spec": {"selector": {"app": "hook"}, "ports": [{"name": "https", "port": 443, "targetPort": 8443}]}})

    def serving() -> bool:
        try:
            endpoints = client.get(f"/api/v1/namespaces/{ns}/endpoints/hooks")
        except NotFound:
            return False
        return any(subset.get("addresses") for subset in endpoints.get("subsets") or [])

    wait_for(serving, 120, "the webhook pod to be a ready endpoint of Service hooks")
    yield cert.ca_pem()


@pytest.fixture
def made(workload_cluster: RunningCluster) -> Iterator[list[str]]:
    paths: list[str] = []
    yield paths
    for path in reversed(paths):
        try:
            workload_cluster.client.delete(path)
        except NotFound:
            pass


def webhook(name: str, ns: str, path: str, ca: bytes, selector: dict, **extra) -> dict:
    return {"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None", "timeoutSeconds": 5,
            "clientConfig": {"service": {"namespace": ns, "name": "hooks", "path": path},
                             "caBundle": base64.b64encode(ca).decode()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "objectSelector": {"matchLabels": selector}, **extra}


def configuration(client, made: list[str], kind: str, name: str, *hooks: dict) -> None:
    plural = kind.lower() + "s"
    client.create(f"{REGISTRATION}/{plural}", {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                                              "metadata": {"name": name}, "webhooks": list(hooks)})
    made.append(f"{REGISTRATION}/{plural}/{name}")


def configmap(kubectl: Kubectl, ns: str, name: str, **labels: str):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, "labels": labels}}
    return kubectl.run("create", "-f", "-", input=json.dumps(body), check=False)


def test_webhooks_policy_and_aggregated_api(workload_cluster: RunningCluster, cluster_namespace: str, hooks: bytes,
                                            made: list[str], tmp_path: Path) -> None:
    client, ns, ca = workload_cluster.client, cluster_namespace, hooks
    kubectl = Kubectl(KUBECTLS["1.33"], workload_cluster.kubeconfig, str(tmp_path / "kube-cache"))
    configuration(client, made, "ValidatingWebhookConfiguration", f"{ns}-validate",
                  webhook("deny.webhook-test.example.com", ns, "/validate", ca, {"check": "deny"}),
                  webhook("ignore.webhook-test.example.com", ns, "/validate", ca, {"check": "ignore"},
                          failurePolicy="Ignore"),
                  webhook("fail.webhook-test.example.com", ns, "/validate", ca, {"check": "fail"},
                          failurePolicy="Fail"))
    configuration(client, made, "MutatingWebhookConfiguration", f"{ns}-mutate",
                  webhook("label.webhook-test.example.com", ns, "/mutate", ca, {"check": "mutate"}))

    def reached_the_webhook():  # the Service's endpoint is ready; kube-proxy's rules for it may lag a sync
        answer = configmap(kubectl, ns, "refused", check="deny", **{"webhook-test/deny": "yes"})
        return None if "failed calling webhook" in answer.stderr else answer

    refused = wait_for(reached_the_webhook, 30, "the webhook to be reachable through its Service", interval=1.0)
    assert refused.returncode != 0
    assert ('admission webhook "deny.webhook-test.example.com" denied the request: denied by the test webhook: '
            "refused") in refused.stderr, refused.stderr
    allowed = configmap(kubectl, ns, "allowed", check="deny")
    assert allowed.returncode == 0, allowed.stderr
    assert "Warning: webhook saw allowed" in allowed.stderr
    assert configmap(kubectl, ns, "mutated", check="mutate").returncode == 0
    labels = client.get(f"/api/v1/namespaces/{ns}/configmaps/mutated")["metadata"]["labels"]
    assert labels["webhook-test/mutated"] == "yes"

    # an APIService backed by the Service: Available, then `kubectl get` through the aggregator
    client.create("/apis/apiregistration.k8s.io/v1/apiservices", {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": f"v1.{GROUP}"},
        "spec": {"group": GROUP, "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 15,
                 "service": {"namespace": ns, "name": "hooks"}, "caBundle": base64.b64encode(ca).decode()}})
    made.append(f"/apis/apiregistration.k8s.io/v1/apiservices/v1.{GROUP}")

    def available() -> bool:
        found = client.get(f"/apis/apiregistration.k8s.io/v1/apiservices/v1.{GROUP}")
        return any(c.get("type") == "Available" and c.get("status") == "True"
                   for c in (found.get("status") or {}).get("conditions") or [])

    wait_for(available, 60, "the APIService to be Available")
    listed = kubectl.run("get", f"things.{GROUP}", "-n", ns, "-o", "name")
    assert listed.stdout.strip() == f"thing.{GROUP}/served-by-the-aggregated-api"

    # a ValidatingAdmissionPolicy: at most 5 replicas in this namespace
    client.create(f"{REGISTRATION}/validatingadmissionpolicies", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": f"{ns}-replicas"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                         "operations": ["CREATE", "UPDATE"],
                                                         "resources": ["deployments"]}]},
                 "validations": [{"expression": "object.spec.replicas <= 5"}]}})
    made.append(f"{REGISTRATION}/validatingadmissionpolicies/{ns}-replicas")
    client.create(f"{REGISTRATION}/validatingadmissionpolicybindings", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": f"{ns}-replicas"},
        "spec": {"policyName": f"{ns}-replicas", "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}})
    made.append(f"{REGISTRATION}/validatingadmissionpolicybindings/{ns}-replicas")
    big = kubectl.run("create", "deployment", "big", f"--image={IMAGE}", "--replicas=6", "-n", ns, check=False)
    assert big.returncode != 0
    assert (f"ValidatingAdmissionPolicy '{ns}-replicas' with binding '{ns}-replicas' denied request: failed "
            "expression: object.spec.replicas <= 5") in big.stderr, big.stderr

    # the webhook's pod gone: Fail refuses, Ignore creates. The pod leaves the API at once; the Service's
    # endpoints and the proxy's rules follow within a few seconds, so ask until the webhook is unreachable.
    client.delete(f"/api/v1/namespaces/{ns}/pods/hook", grace_period_seconds=0)
    attempts = iter(range(1000))

    def refused_by_fail():
        result = configmap(kubectl, ns, f"failed-{next(attempts)}", check="fail")
        return result if result.returncode != 0 else None

    failed = wait_for(refused_by_fail, 60, "the Fail webhook to refuse once its pod is gone", interval=1.0)
    assert 'failed calling webhook "fail.webhook-test.example.com"' in failed.stderr, failed.stderr
    ignored = configmap(kubectl, ns, "ignored", check="ignore")
    assert ignored.returncode == 0, ignored.stderr
