"""The csrsigning and csrapproving controllers against a real API server (in a thread) and its CA: a joiner in
`system:bootstrappers` gets a `system:node:<name>` client certificate that authenticates as that node; a
second joiner claiming the same name with another node password is denied, the first joiner's password
joins again; a node renews its own certificate; a kubelet-serving request naming `kubernetes.default.svc`
is denied, one for the node's own name and address is signed; a kube-apiserver-client request is signed
only once someone approves it, and one asking for server auth fails (control/controllers/certificates/)."""

from __future__ import annotations

import base64
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from control.client.kubeconfig import load_kubeconfig
from control.controllers.manager import CONTROLLERS, ControllerManager, ControllerManagerConfiguration
from control.util import openssl
from tests.support.apiserver import Endpoint, running_server

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
KUBELET_CLIENT, KUBELET_SERVING = "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving"
BOOTSTRAPPER = {"Impersonate-User": "system:bootstrap:node-token", "Impersonate-Group": "system:bootstrappers"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Endpoint, Path]]:
    data = tmp_path_factory.mktemp("apiserver")
    with running_server(str(data)) as endpoint:
        settings = ControllerManagerConfiguration(cluster_signing_cert_file=str(data / "tls" / "ca.crt"),
                                                  cluster_signing_key_file=str(data / "tls" / "ca.key"))
        manager = ControllerManager(load_kubeconfig(endpoint.kubeconfig), settings=settings,
                                    controllers={name: CONTROLLERS[name] for name in ("csrsigning", "csrapproving")})
        manager.start()
        # nodes create and read CSRs (upstream's NodeRules, which the Node authorizer grants): bound here so
        # this test does not depend on that authorizer
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "test:nodes-csrs"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": "system:node-bootstrapper"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}]}
        assert endpoint.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                                json=binding).status_code == 201
        try:
            yield endpoint, data
        finally:
            manager.stop()


def key_and_csr(directory: Path, name: str, subject: str, *, sans: str = "", key: str | None = None) -> tuple[str, str]:
    """(key path, base64 of the PEM CSR); a new EC key unless `key` names one to sign with."""
    csr = str(directory / f"{name}.csr")
    extra = ["-addext", f"subjectAltName={sans}"] if sans else []
    if key is None:
        key = str(directory / f"{name}.key")
        openssl.run("req", "-new", *openssl.EC_KEY, "-keyout", key, "-out", csr, "-subj", subject, *extra)
    else:
        openssl.run("req", "-new", "-key", key, "-out", csr, "-subj", subject, *extra)
    return key, base64.b64encode(Path(csr).read_bytes()).decode()


def create(endpoint: Endpoint, name: str, request: str, signer: str, usages: list[str], *,
           headers: dict[str, str] | None = None, cert: tuple[str, str] | None = None) -> None:
    body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": request, "signerName": signer, "usages": usages}}
    if cert is not None:
        answer = requests.post(endpoint.url + CSRS, json=body, cert=cert, verify=endpoint.ca, timeout=30)
    else:
        answer = endpoint.request("POST", CSRS, json=body, headers=headers or {})
    assert answer.status_code == 201, answer.text


def wait(endpoint: Endpoint, name: str, done: Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        csr = endpoint.request("GET", f"{CSRS}/{name}").json()
        if done(csr) or time.monotonic() > deadline:
            return csr
        time.sleep(0.2)


def condition(csr: dict[str, Any]) -> str:
    kinds = [c["type"] for c in (csr.get("status") or {}).get("conditions") or []]
    return ",".join(kinds)


def issued(csr: dict[str, Any]) -> bool:
    kinds = condition(csr)
    return bool((csr.get("status") or {}).get("certificate")) or "Denied" in kinds or "Failed" in kinds


def certificate(csr: dict[str, Any], path: Path) -> str:
    path.write_bytes(base64.b64decode(csr["status"]["certificate"]))
    return str(path)


def whoami(endpoint: Endpoint, cert: str, key: str) -> dict[str, Any]:
    answer = requests.post(endpoint.url + "/apis/authentication.k8s.io/v1/selfsubjectreviews", cert=(cert, key),
                           verify=endpoint.ca, timeout=30,
                           json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert answer.status_code == 201, answer.text
    return answer.json()["status"]["userInfo"]


CLIENT = ["digital signature", "client auth"]


def test_join_then_a_second_joiner_claiming_the_name_is_denied(cluster: tuple[Endpoint, Path], tmp_path: Path) -> None:
    endpoint, _ = cluster
    node_key, request = key_and_csr(tmp_path, "first", "/O=system:nodes/CN=system:node:n1")
    create(endpoint, "node-csr-first", request, KUBELET_CLIENT, CLIENT, headers=BOOTSTRAPPER)
    csr = wait(endpoint, "node-csr-first", issued)
    assert condition(csr) == "Approved", csr
    assert csr["spec"]["username"] == "system:bootstrap:node-token"
    cert = certificate(csr, tmp_path / "n1.crt")
    assert whoami(endpoint, cert, node_key)["username"] == "system:node:n1"
    assert whoami(endpoint, cert, node_key)["groups"] == ["system:nodes", "system:authenticated"]
    days = (openssl_end(cert) - time.time()) / 86400
    assert 364 < days <= 365
    secret = endpoint.request("GET", "/api/v1/namespaces/kube-system/secrets/n1.node-password.slimkube")
    assert secret.status_code == 200 and secret.json()["type"] == "slimkube.io/node-password"

    _, intruder = key_and_csr(tmp_path, "intruder", "/O=system:nodes/CN=system:node:n1")
    create(endpoint, "node-csr-intruder", intruder, KUBELET_CLIENT, CLIENT, headers=BOOTSTRAPPER)
    denied = wait(endpoint, "node-csr-intruder", issued)
    assert condition(denied) == "Denied" and not denied["status"].get("certificate")
    assert denied["status"]["conditions"][0]["reason"] == "NodePasswordMismatch"

    _, again = key_and_csr(tmp_path, "again", "/O=system:nodes/CN=system:node:n1", key=node_key)
    create(endpoint, "node-csr-again", again, KUBELET_CLIENT, CLIENT, headers=BOOTSTRAPPER)
    assert condition(wait(endpoint, "node-csr-again", issued)) == "Approved"


def openssl_end(cert: str) -> float:
    return ssl.cert_time_to_seconds(openssl.run("x509", "-in", cert, "-noout", "-enddate").strip().partition("=")[2])


def test_a_node_renews_its_own_certificate(cluster: tuple[Endpoint, Path], tmp_path: Path) -> None:
    endpoint, _ = cluster
    key, request = key_and_csr(tmp_path, "n2", "/O=system:nodes/CN=system:node:n2")
    create(endpoint, "node-csr-n2", request, KUBELET_CLIENT, CLIENT, headers=BOOTSTRAPPER)
    cert = certificate(wait(endpoint, "node-csr-n2", issued), tmp_path / "n2.crt")
    new_key, renewal = key_and_csr(tmp_path, "n2-renewal", "/O=system:nodes/CN=system:node:n2")
    create(endpoint, "node-csr-n2-renewal", renewal, KUBELET_CLIENT, CLIENT,
           headers={"Impersonate-User": "system:node:n2", "Impersonate-Group": "system:nodes"})
    renewed = wait(endpoint, "node-csr-n2-renewal", issued)
    assert renewed["status"]["conditions"][0]["message"].startswith("Auto approving self kubelet client certificate")
    assert whoami(endpoint, certificate(renewed, tmp_path / "n2b.crt"), new_key)["username"] == "system:node:n2"
    assert cert


SERVING = ["digital signature", "server auth"]
AS_NODE = {"Impersonate-User": "system:node:n3", "Impersonate-Group": "system:nodes"}


def test_serving_certificates_only_for_the_nodes_own_names(cluster: tuple[Endpoint, Path], tmp_path: Path) -> None:
    endpoint, _ = cluster
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n3"},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.9.0.3"},
                                     {"type": "Hostname", "address": "n3"}]}}
    assert endpoint.request("POST", "/api/v1/nodes", json=node).status_code == 201
    _, bad = key_and_csr(tmp_path, "svc", "/O=system:nodes/CN=system:node:n3",
                         sans="DNS:n3,DNS:kubernetes.default.svc,IP:10.9.0.3")
    create(endpoint, "serving-svc", bad, KUBELET_SERVING, SERVING, headers=AS_NODE)
    denied = wait(endpoint, "serving-svc", issued)
    assert condition(denied) == "Denied" and "kubernetes.default.svc" in denied["status"]["conditions"][0]["message"]

    _, other = key_and_csr(tmp_path, "other", "/O=system:nodes/CN=system:node:n3", sans="DNS:n3,IP:10.9.0.4")
    create(endpoint, "serving-other", other, KUBELET_SERVING, SERVING, headers=AS_NODE)
    assert condition(wait(endpoint, "serving-other", issued)) == "Denied"

    _, good = key_and_csr(tmp_path, "good", "/O=system:nodes/CN=system:node:n3", sans="DNS:n3,IP:10.9.0.3")
    create(endpoint, "serving-good", good, KUBELET_SERVING, SERVING, headers=AS_NODE)
    signed = wait(endpoint, "serving-good", issued)
    assert condition(signed) == "Approved" and signed["status"].get("certificate")
    cert = certificate(signed, tmp_path / "serving.crt")
    assert openssl.alt_names(cert) == {"DNS:n3", "IP:10.9.0.3"}
    assert "TLS Web Server Authentication" in openssl.run("x509", "-in", cert, "-noout", "-ext", "extendedKeyUsage")

    _, joiner = key_and_csr(tmp_path, "joiner", "/O=system:nodes/CN=system:node:n3", sans="DNS:n3,IP:10.9.0.3")
    create(endpoint, "serving-joiner", joiner, KUBELET_SERVING, SERVING, headers=BOOTSTRAPPER)
    assert condition(wait(endpoint, "serving-joiner", issued)) == "Denied"  # only the node itself


def approve(endpoint: Endpoint, name: str) -> None:
    csr = endpoint.request("GET", f"{CSRS}/{name}").json()
    csr.setdefault("status", {})["conditions"] = [{"type": "Approved", "status": "True", "reason": "Test"}]
    assert endpoint.request("PUT", f"{CSRS}/{name}/approval", json=csr).status_code == 200


def test_apiserver_client_certificates_once_approved(cluster: tuple[Endpoint, Path], tmp_path: Path) -> None:
    endpoint, _ = cluster
    key, request = key_and_csr(tmp_path, "alice", "/O=team/CN=alice")
    create(endpoint, "alice", request, "kubernetes.io/kube-apiserver-client", ["client auth"])
    time.sleep(1.0)
    assert not endpoint.request("GET", f"{CSRS}/alice").json().get("status", {}).get("certificate")  # not approved
    approve(endpoint, "alice")
    signed = wait(endpoint, "alice", lambda csr: bool((csr.get("status") or {}).get("certificate")))
    assert whoami(endpoint, certificate(signed, tmp_path / "alice.crt"), key) == {
        "username": "alice", "groups": ["team", "system:authenticated"]}

    _, serving = key_and_csr(tmp_path, "bob", "/CN=bob")
    create(endpoint, "bob", serving, "kubernetes.io/kube-apiserver-client", ["client auth", "server auth"])
    approve(endpoint, "bob")
    failed = wait(endpoint, "bob", issued)
    assert condition(failed) == "Approved,Failed"
    assert failed["status"]["conditions"][1]["message"] == "invalid usage for client certificate: server auth"
