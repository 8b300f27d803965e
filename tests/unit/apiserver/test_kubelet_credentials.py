"""The API server's side of kubelet security: who a token is and the TokenReview answer (authn.py), the
validated serving-certificate request (kubeletcerts.py), the certificate it issues whatever the CSR asks
(certs.sign), its own kubelet client certificate, and where it dials a node's kubelet (kubeletclient.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from control.apiserver.authentication import certs, kubeletcerts
from control.apiserver.authentication import tokens as authn
from control.apiserver.status import APIError
from control.apiserver.streaming.kubeletclient import NodeConnection, node_connection
from control.util import openssl

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
TOKENS = authn.TokenAuthenticator({"admin-secret": authn.ADMIN, "node-pass": authn.NODE, "K10abc::node:node-pass":
                                   authn.NODE})


@pytest.mark.parametrize(("header", "expected"), [
    pytest.param("Bearer admin-secret", authn.ADMIN, id="admin"),
    pytest.param("bearer  node-pass ", authn.NODE, id="node-password"),
    pytest.param("Bearer K10abc::node:node-pass", authn.NODE, id="node-k10-form"),
    pytest.param("Bearer admin-secre", None, id="prefix"),
    pytest.param("Bearer ", None, id="empty"),
    pytest.param("Basic admin-secret", None, id="other-scheme"),
    pytest.param("", None, id="none"),
])
def test_authenticate_header(header: str, expected: authn.UserInfo | None) -> None:
    assert TOKENS.authenticate_header(header) == expected


def test_token_review_answers_known_and_unknown_tokens() -> None:
    review = authn.token_review({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                 "spec": {"token": "admin-secret", "audiences": ["https://kubernetes"]}}, TOKENS)
    assert review["kind"] == "TokenReview" and review["apiVersion"] == "authentication.k8s.io/v1"
    assert review["status"] == {"authenticated": True, "audiences": ["https://kubernetes"],
                                "user": {"username": "system:admin",
                                         "groups": ["system:masters", "system:authenticated"]}}
    node = authn.token_review({"spec": {"token": "node-pass"}}, TOKENS)["status"]
    assert node["authenticated"] and node["user"]["groups"] == ["system:nodes", "system:authenticated"]
    denied = authn.token_review({"spec": {"token": "guess"}}, TOKENS)["status"]
    assert denied == {"authenticated": False, "user": {}, "error": "invalid bearer token"}


@pytest.mark.parametrize("body", [
    pytest.param([], id="not-an-object"),
    pytest.param({"spec": {}}, id="no-token"),
    pytest.param({"spec": {"token": 3}}, id="token-not-a-string"),
    pytest.param({"kind": "SubjectAccessReview", "spec": {"token": "x"}}, id="wrong-kind"),
])
def test_token_review_rejects_malformed_bodies(body: Any) -> None:
    with pytest.raises(APIError) as caught:
        authn.token_review(body, TOKENS)
    assert caught.value.code == 400


CSR = "-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"


def test_serving_request_names_the_node_its_hostnames_and_addresses() -> None:
    wanted = kubeletcerts.parse({"nodeName": "node-1", "hostnames": ["host-a", "node-1"],
                                 "addresses": ["10.250.0.1", "fd00::0001"], "csr": CSR})
    assert wanted.alt_names == ("DNS:node-1", "DNS:host-a", "IP:10.250.0.1", "IP:fd00::1")
    assert wanted.subject == "/O=system:nodes/CN=system:node:node-1"
    assert "extendedKeyUsage=serverAuth\n" in wanted.extensions and "clientAuth" not in wanted.extensions


@pytest.mark.parametrize(("body", "message"), [
    pytest.param({"nodeName": "Node_1", "csr": CSR}, "nodeName", id="bad-node-name"),
    pytest.param({"nodeName": "n", "csr": "hello"}, "csr", id="not-a-csr"),
    pytest.param({"nodeName": "n", "csr": CSR, "addresses": ["0.0.0.0"]}, "cannot name", id="unspecified"),
    pytest.param({"nodeName": "n", "csr": CSR, "addresses": ["nope"]}, "not an IP", id="not-an-ip"),
    pytest.param({"nodeName": "n", "csr": CSR, "hostnames": ["a,IP:1.2.3.4"]}, "hostnames", id="injection"),
    pytest.param({"nodeName": "n", "csr": CSR, "addresses": "10.0.0.1"}, "list", id="not-a-list"),
    pytest.param({"nodeName": "n", "csr": CSR, "addresses": [f"10.0.0.{i}" for i in range(40)]}, "at most",
                 id="too-many"),
])
def test_serving_request_refusals(body: dict, message: str) -> None:
    with pytest.raises(APIError) as caught:
        kubeletcerts.parse(body)
    assert caught.value.code == 400 and message in caught.value.status["message"]


def _subject(pem: bytes) -> str:
    return subprocess.run(["openssl", "x509", "-noout", "-subject", "-ext", "extendedKeyUsage"], input=pem,
                          capture_output=True, check=True).stdout.decode()


@needs_openssl
def test_sign_takes_only_the_public_key_from_the_csr(tmp_path: Path) -> None:
    served = certs.ensure_serving_certs(str(tmp_path), bind_address="127.0.0.1", service_ip="10.96.0.1")
    key, csr = tmp_path / "k.key", tmp_path / "r.csr"
    openssl.run("req", "-new", *openssl.EC_KEY, "-keyout", str(key), "-out", str(csr),
                "-subj", "/O=system:masters/CN=evil", "-addext", "extendedKeyUsage=clientAuth")
    wanted = kubeletcerts.parse({"nodeName": "node-1", "addresses": ["10.250.0.2"], "csr": csr.read_text()})
    issued = certs.sign(served, csr.read_bytes(), subject=wanted.subject, extensions=wanted.extensions)
    text = _subject(issued)
    assert "CN = system:node:node-1" in text and "system:masters" not in text
    assert "TLS Web Server Authentication" in text and "Client" not in text
    (tmp_path / "issued.crt").write_bytes(issued)
    assert openssl.verifies(str(tmp_path / "issued.crt"), served.ca_path)
    assert openssl.alt_names(str(tmp_path / "issued.crt")) == {"DNS:node-1", "IP:10.250.0.2"}
    bad = csr.read_text().replace(csr.read_text().splitlines()[3], "A" * 64)  # a broken self-signature/PEM
    with pytest.raises(openssl.OpenSSLError):
        certs.sign(served, bad.encode(), subject=wanted.subject, extensions=wanted.extensions)


@needs_openssl
def test_kubelet_client_certificate_is_upstreams_and_made_once(tmp_path: Path) -> None:
    served = certs.ensure_serving_certs(str(tmp_path), bind_address="127.0.0.1", service_ip="10.96.0.1")
    certs.ensure_kubelet_client_cert(served)
    with open(served.kubelet_client_cert_path, "rb") as handle:
        first = handle.read()
    text = _subject(first)
    assert "O = system:masters, CN = kube-apiserver-kubelet-client" in text
    assert "TLS Web Client Authentication" in text and "Server" not in text
    assert openssl.verifies(served.kubelet_client_cert_path, served.ca_path)
    assert os.stat(served.kubelet_client_key_path).st_mode & 0o077 == 0
    certs.ensure_kubelet_client_cert(served)
    with open(served.kubelet_client_cert_path, "rb") as handle:
        assert handle.read() == first


@pytest.mark.parametrize(("status", "expected"), [
    pytest.param({"addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.0.0.5"}],
                  "daemonEndpoints": {"kubeletEndpoint": {"Port": 12345}}}, NodeConnection("10.0.0.5", 12345),
                 id="internal-ip-and-port"),
    pytest.param({"addresses": [{"type": "Hostname", "address": "n1"}]}, NodeConnection("n1", 10250),
                 id="hostname-default-port"),
    pytest.param({"addresses": [{"type": "ExternalIP", "address": "1.2.3.4"}, {"type": "Hostname", "address": "n"}],
                  "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}}, NodeConnection("n", 10250),
                 id="preference-order-and-bad-port"),
    pytest.param({"addresses": []}, None, id="no-address"),
])
def test_node_connection(status: dict, expected: NodeConnection | None) -> None:
    assert node_connection({"status": status}) == expected


def test_node_connection_url_brackets_ipv6() -> None:
    assert NodeConnection("fd00::1", 10250).url("/pods") == "https://[fd00::1]:10250/pods"
