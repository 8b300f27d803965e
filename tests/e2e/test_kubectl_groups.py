"""End-to-end: the stored-and-validated API groups (docs/apiserver.md) through the real kubectl binaries
(1.33 and Debian's 1.20) against a real API server — Ingress (`kubectl create ingress`), IngressClass, NetworkPolicy,
RuntimeClass, CSIDriver, CertificateSigningRequest with `kubectl certificate approve`, webhook
configurations, the APIServices of the local groups and `kubectl get cs` against a control plane whose
scheduler and controller manager really run.

kubectl 1.33 sends protobuf bodies for `create ingress`, so the networking group's protobuf table is exercised too.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from control.apiserver.server import ServerConfig
from slimkube.controlplane import BackgroundServer, SchedulerOptions
from slimkube.leadership import LeaderElection
from tests.e2e.conftest import KUBECTLS, Kubectl
from tests.e2e.test_kubectl import header, row
from tests.support.apiserver import Endpoint, free_port


@pytest.fixture
def ns(kubectl: Kubectl) -> str:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    kubectl.run("create", "namespace", name)
    return name


def _csr_request(tmp_path: Path) -> str:
    """A real PKCS#10 request, base64 of its PEM as `spec.request` carries it."""
    pem = subprocess.run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "k"),
                          "-subj", "/CN=alice"], capture_output=True, check=True).stdout
    return base64.b64encode(pem).decode()


def test_ingress_create_get_and_refusal(kubectl: Kubectl, ns: str) -> None:
    result = kubectl.run("create", "ingress", "web", "-n", ns, "--class=nginx",
                         "--rule=foo.example.com/api*=api:8080,tls=web-tls")
    assert "ingress.networking.k8s.io/web created" in result.stdout
    table = kubectl.run("get", "ingress", "-n", ns).stdout
    assert header(table) == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert row(table, "web").split()[:4] == ["web", "nginx", "foo.example.com", "80,"]
    stored = json.loads(kubectl.run("get", "ingress", "web", "-n", ns, "-o", "json").stdout)
    assert stored["metadata"]["generation"] == 1
    assert stored["spec"]["rules"][0]["http"]["paths"][0] == {
        "path": "/api", "pathType": "Prefix", "backend": {"service": {"name": "api", "port": {"number": 8080}}}}
    bad = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "bad"},
           "spec": {"rules": [{"host": "10.0.0.1", "http": {"paths": [{"path": "x", "pathType": "Exact", "backend": {
               "service": {"name": "api", "port": {"number": 80}}}}]}}]}}
    refused = kubectl.run("apply", "-n", ns, "-f", "-", input=json.dumps(bad), check=False)
    assert refused.returncode != 0
    assert 'The Ingress "bad" is invalid' in refused.stderr
    assert "spec.rules[0].host: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address" in refused.stderr
    assert 'spec.rules[0].http.paths[0].path: Invalid value: "x": must be an absolute path' in refused.stderr


def test_get_the_other_groups_with_their_columns(kubectl: Kubectl, apiserver: Endpoint, ns: str,
                                                tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:6]
    objects = [
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "db", "namespace": ns},
         "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "ingress": [{"ports": [{"port": 5432}]}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": f"nginx-{suffix}"},
         "spec": {"controller": "k8s.io/ingress-nginx"}},
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": f"gvisor-{suffix}"},
         "handler": "runsc"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": f"csi-{suffix}.example.com"},
         "spec": {"podInfoOnMount": True}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": f"policy-{suffix}"}, "webhooks": [{
             "name": "check.policy.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
             "clientConfig": {"url": "https://policy.example.com/check"}}]},
        {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
         "metadata": {"name": f"alice-{suffix}"},
         "spec": {"request": _csr_request(tmp_path), "signerName": "kubernetes.io/kube-apiserver-client",
                  "usages": ["client auth"], "expirationSeconds": 86400}},
    ]
    kubectl.run("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    netpol = kubectl.run("get", "netpol", "-n", ns).stdout
    assert header(netpol) == ["NAME", "POD-SELECTOR", "AGE"] and row(netpol, "db").split()[1] == "app=db"
    policy = json.loads(kubectl.run("get", "networkpolicy", "db", "-n", ns, "-o", "json").stdout)
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # upstream's default
    assert policy["spec"]["ingress"][0]["ports"] == [{"port": 5432, "protocol": "TCP"}]
    assert row(kubectl.run("get", "runtimeclass").stdout, f"gvisor-{suffix}").split()[1] == "runsc"
    assert row(kubectl.run("get", "ingressclass").stdout, f"nginx-{suffix}").split()[1:3] == [
        "k8s.io/ingress-nginx", "<none>"]
    drivers = kubectl.run("get", "csidrivers").stdout
    assert header(drivers)[:4] == ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY"]
    assert row(drivers, f"csi-{suffix}.example.com").split()[1:4] == ["true", "true", "false"]
    assert row(kubectl.run("get", "validatingwebhookconfigurations").stdout, f"policy-{suffix}").split()[1] == "1"
    csrs = kubectl.run("get", "csr").stdout
    assert header(csrs) == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
    assert row(csrs, f"alice-{suffix}").split()[2:] == ["kubernetes.io/kube-apiserver-client", "system:admin", "24h",
                                                       "Pending"]
    approved = kubectl.run("certificate", "approve", f"alice-{suffix}")
    assert f"certificatesigningrequest.certificates.k8s.io/alice-{suffix} approved" in approved.stdout
    assert row(kubectl.run("get", "csr").stdout, f"alice-{suffix}").split()[-1] == "Approved"
    assert "already Approved" in kubectl.run("certificate", "deny", f"alice-{suffix}", check=False).stderr
    # the server refuses both at once through /approval, whoever asks
    path = f"/apis/certificates.k8s.io/v1/certificatesigningrequests/alice-{suffix}"
    csr = apiserver.request("GET", path).json()
    csr["status"]["conditions"].append({"type": "Denied", "status": "True", "reason": "Changed", "message": "no"})
    both = apiserver.request("PUT", path + "/approval", json=csr)
    assert both.status_code == 422
    assert "Approved and Denied conditions are mutually exclusive" in both.json()["message"]
    several = kubectl.run("get", "ingress,netpol,csr,runtimeclass,apiservices", "-A").stdout
    assert "networkpolicy.networking.k8s.io/db" in several
    assert f"runtimeclass.node.k8s.io/gvisor-{suffix}" in several
    services = kubectl.run("get", "apiservices").stdout
    assert header(services) == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    for name in ("v1.", "v1.apps", "v1.networking.k8s.io", "v1.certificates.k8s.io", "v1beta1.metrics.k8s.io"):
        assert row(services, name).split()[1:3] == ["Local", "True"], services


@pytest.mark.parametrize("scheduler", [True, False], ids=["all-running", "scheduler-disabled"])
def test_get_componentstatuses_from_real_checks(tmp_path: Path, scheduler: bool) -> None:
    """`kubectl get cs` against `slimkube server`'s parts in this process: the scheduler's /healthz over
    HTTP, the controller manager's threads, the store."""
    config = ServerConfig(data_dir=str(tmp_path / "server"), bind_address="127.0.0.1", port=0)
    server = BackgroundServer(config, disable=() if scheduler else ("scheduler",),
                              election=LeaderElection(enabled=False),
                              scheduler=SchedulerOptions(address=("127.0.0.1", free_port())))
    api = server.start()
    try:
        kubectl = Kubectl(KUBECTLS["1.33"], api.kubeconfig_path, str(tmp_path / "cache"))
        result = kubectl.run("get", "cs")
        assert "Warning: v1 ComponentStatus is deprecated in v1.19+" in result.stderr
        table = result.stdout
        assert header(table) == ["NAME", "STATUS", "MESSAGE", "ERROR"]
        assert row(table, "controller-manager").split()[1:3] == ["Healthy", "ok"]
        assert row(table, "etcd-0").split()[1:3] == ["Healthy", "ok"]
        if scheduler:
            assert row(table, "scheduler").split()[1:3] == ["Healthy", "ok"]
        else:
            assert row(table, "scheduler").split()[1] == "Unhealthy"
        one = json.loads(kubectl.run("get", "componentstatus", "etcd-0", "-o", "json").stdout)
        assert one["conditions"] == [{"type": "Healthy", "status": "True", "message": "ok"}]
    finally:
        server.stop()


def test_metrics_and_health_through_kubectl(kubectl: Kubectl, ns: str) -> None:
    kubectl.run("create", "configmap", "one", "-n", ns, "--from-literal=a=b")
    text = kubectl.run("get", "--raw", "/metrics").stdout
    assert re.search(r'^apiserver_request_total\{code="201",component="apiserver",dry_run="",group="",'
                     r'resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"\} \d', text,
                     re.MULTILINE), text[:2000]
    assert 'apiserver_request_duration_seconds_bucket{component="apiserver"' in text
    assert re.search(r'^apiserver_storage_objects\{resource="namespaces"\} [1-9]', text, re.MULTILINE)
    assert re.search(r'^etcd_request_duration_seconds_count\{operation="create",type="configmaps"\} [1-9]', text,
                     re.MULTILINE)
    assert "apiserver_current_inflight_requests{request_kind=\"readOnly\"}" in text
    ready = kubectl.run("get", "--raw", "/readyz?verbose").stdout
    assert ready.splitlines()[0] == "[+]ping ok" and "[+]etcd ok" in ready.splitlines()
    assert ready.rstrip().endswith("readyz check passed")
    assert kubectl.run("get", "--raw", "/livez?verbose").stdout.rstrip().endswith("livez check passed")
    assert kubectl.run("get", "--raw", "/readyz/etcd").stdout == "ok"
    assert kubectl.run("get", "--raw", "/livez/ping").stdout == "ok"
    assert kubectl.run("get", "--raw", "/readyz/nothing", check=False).returncode != 0


def test_kubectl_133_uses_aggregated_discovery(apiserver: Endpoint, tmp_path: Path) -> None:
    """kubectl 1.33 with an empty cache: two discovery requests (/api, /apis) answered as
    APIGroupDiscoveryList v2, and no fallback to the per-group-version documents."""
    kubectl = Kubectl(KUBECTLS["1.33"], apiserver.kubeconfig, str(tmp_path / "cache"))
    result = kubectl.run("get", "ingress,deployments,csr", "-A", "-v=8")
    log = result.stderr
    urls = re.findall(r'"Request" verb="GET" url="https://[^/]+(/[^"?]*)', log)
    assert urls[:2] == ["/api", "/apis"], urls
    assert not [url for url in urls if re.fullmatch(r"/apis?/[^/]+(/v[^/]+)?", url)], urls  # no fallback
    assert log.count("Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList") >= 2
    assert log.count("Content-Type: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList") == 2
    older = "/usr/lib/google-cloud-sdk/bin/kubectl.1.27"  # asks for v2beta1 only, as 1.26-1.29 do
    if Path(older).exists():
        log = Kubectl(older, apiserver.kubeconfig, str(tmp_path / "cache-1.27")).run("get", "ingress", "-A",
                                                                                    "-v=8").stderr
        assert "Content-Type: application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList" in log
        assert not re.findall(r"GET https://[^/ ]+/apis/[^/ ?]+/v[^/ ?]+\?timeout", log)  # no fallback
    legacy = apiserver.request("GET", "/apis", headers={"Accept": "application/json"})
    assert legacy.headers["Content-Type"] == "application/json" and legacy.json()["kind"] == "APIGroupList"
    beta = apiserver.request("GET", "/api", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"})
    assert beta.headers["Content-Type"] == "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    assert beta.json()["apiVersion"] == "apidiscovery.k8s.io/v2beta1"


def test_error_status_bytes_as_upstream(apiserver: Endpoint) -> None:
    missing = apiserver.request("GET", "/apis/apps/v1/namespaces/default/deployments/web")
    assert missing.status_code == 404
    assert missing.content == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
                               b'"deployments.apps \\"web\\" not found","reason":"NotFound","details":{"name":"web",'
                               b'"group":"apps","kind":"deployments"},"code":404}\n')
    nowhere = apiserver.request("GET", "/nowhere")
    assert nowhere.content.endswith(b'"reason":"NotFound","details":{},"code":404}\n')
