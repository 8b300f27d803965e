"""The API server's side of kubelet security: who a token is and the TokenReview answer (authn.py), the
API server's own kubelet client certificate, and where it dials a node's kubelet and which name it verifies
there (kubeletclient.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from control.apiserver.authentication import certs
from control.apiserver.authentication import tokens as authn
from control.apiserver.status import APIError
from control.apiserver.streaming.kubeletclient import NodeConnection, node_connection
from control.util import openssl

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
TOKENS = authn.TokenAuthenticator({"admin-secret": authn.ADMIN, "node-pass": authn.JOIN, "K10abc::node:node-pass":
                                   authn.JOIN})


@pytest.mark.parametrize(("header", "expected"), [
    pytest.param("Bearer admin-secret", authn.ADMIN, id="admin"),
    pytest.param("bearer  node-pass ", authn.JOIN, id="node-password"),
    pytest.param("Bearer K10abc::node:node-pass", authn.JOIN, id="node-k10-form"),
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
    join = authn.token_review({"spec": {"token": "node-pass"}}, TOKENS)["status"]
    assert join["authenticated"] and join["user"] == {"username": "system:bootstrap:node-token",
                                                      "groups": ["system:bootstrappers", "system:authenticated"]}
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


def _subject(pem: bytes) -> str:
    return subprocess.run(["openssl", "x509", "-noout", "-subject", "-ext", "extendedKeyUsage"], input=pem,
                          capture_output=True, check=True).stdout.decode()


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


def test_the_kubelet_is_verified_by_its_node_name_not_its_address() -> None:
    connection = node_connection({"metadata": {"name": "n1"},
                                  "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]}})
    assert connection is not None and connection.host == "10.0.0.5" and connection.server_hostname == "n1"
