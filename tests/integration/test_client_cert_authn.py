"""Client-certificate authentication against a real API server (in a thread): a certificate the cluster CA
signed is the user its CN names in the groups its O entries name, for the official Python client and for
kubectl (1.20 and the newest) with a client-certificate kubeconfig; an expired one gets 401, one from another
CA is refused in the TLS handshake, and a bearer token still works beside certificates
(control/apiserver/authentication/x509.py)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from control.apiserver.authentication import certs
from control.util import openssl
from tests.conftest import unavailable
from tests.support.apiserver import Endpoint, running_server

KUBECTLS = {"1.33": "/usr/lib/google-cloud-sdk/bin/kubectl.1.33", "1.20": "/opt/slimkube/kubectl-1.20/usr/bin/kubectl"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Endpoint, Path]]:
    data = tmp_path_factory.mktemp("apiserver")
    with running_server(str(data)) as endpoint:
        yield endpoint, data


def client_cert(data: Path, out: Path, subject: str, *, days: str = "30",
                ca: tuple[str, str] | None = None) -> tuple[str, str]:
    """(cert, key) for `subject`, signed by the server's CA (or by `ca`, a (cert, key) pair)."""
    key, csr, cert = str(out / "client.key"), str(out / "client.csr"), str(out / "client.crt")
    openssl.run("req", "-new", *openssl.EC_KEY, "-keyout", key, "-out", csr, "-subj", subject)
    ca_cert, ca_key = ca or (str(data / "tls" / "ca.crt"), str(data / "tls" / "ca.key"))
    openssl.run("x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
                "-days", days, "-extfile", _ext(out))
    return cert, key


def _ext(out: Path) -> str:
    path = out / "client.ext"
    path.write_text(certs.CLIENT_EXTENSIONS)
    return str(path)


def kubeconfig(endpoint: Endpoint, cert: str, key: str, path: Path) -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": endpoint.url, "certificate-authority": endpoint.ca}}],
        "users": [{"name": "u", "user": {"client-certificate": cert, "client-key": key}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return str(path)


def whoami(endpoint: Endpoint, cert: str, key: str) -> requests.Response:
    return requests.post(endpoint.url + "/apis/authentication.k8s.io/v1/selfsubjectreviews", cert=(cert, key),
                         verify=endpoint.ca, timeout=30,
                         json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})


def test_the_certificate_subject_is_the_user_and_its_groups(server: tuple[Endpoint, Path],
                                                             tmp_path: Path) -> None:
    endpoint, data = server
    cert, key = client_cert(data, tmp_path, "/O=team-a/O=system:nodes/CN=system:node:alpha")
    answer = whoami(endpoint, cert, key)
    assert answer.status_code == 201, answer.text
    user: dict[str, Any] = answer.json()["status"]["userInfo"]
    assert user["username"] == "system:node:alpha"
    assert user["groups"] == ["team-a", "system:nodes", "system:authenticated"]


def test_the_official_client_with_a_client_certificate_kubeconfig(server: tuple[Endpoint, Path],
                                                                   tmp_path: Path) -> None:
    endpoint, data = server
    cert, key = client_cert(data, tmp_path, "/O=system:masters/CN=ops")
    api = k8s_config.new_client_from_config(config_file=kubeconfig(endpoint, cert, key, tmp_path / "kc"))
    with api:
        names = [ns.metadata.name for ns in k8s.CoreV1Api(api).list_namespace().items]
    assert "kube-system" in names


def test_a_user_without_permissions_is_refused_by_name(server: tuple[Endpoint, Path],
                                                        tmp_path: Path) -> None:
    endpoint, data = server
    cert, key = client_cert(data, tmp_path, "/CN=carol")
    answer = requests.get(endpoint.url + "/api/v1/namespaces/default/secrets", cert=(cert, key), verify=endpoint.ca,
                          timeout=30)
    assert answer.status_code == 403
    assert 'User "carol" cannot list resource "secrets"' in answer.json()["message"]


@pytest.mark.parametrize("version", sorted(KUBECTLS))
def test_kubectl_with_a_client_certificate_kubeconfig(server: tuple[Endpoint, Path], tmp_path: Path,
                                                       version: str) -> None:
    endpoint, data = server
    binary = KUBECTLS[version]
    if not os.path.exists(binary):
        unavailable(f"kubectl {version}", f"{binary} is missing")
    cert, key = client_cert(data, tmp_path, "/O=system:masters/CN=ops")
    config = kubeconfig(endpoint, cert, key, tmp_path / "kc")
    result = subprocess.run([binary, "--kubeconfig", config, "get", "namespaces", "-o", "json"], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "kube-system" in {item["metadata"]["name"] for item in json.loads(result.stdout)["items"]}
    refused = subprocess.run([binary, "--kubeconfig", kubeconfig(endpoint, *client_cert(data, tmp_path, "/CN=dave"),
                                                                 tmp_path / "kc2"),
                              "get", "secrets"], capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode != 0 and 'User "dave" cannot list resource "secrets"' in refused.stderr


def test_an_expired_certificate_gets_401(server: tuple[Endpoint, Path], tmp_path: Path) -> None:
    endpoint, data = server
    cert, key = client_cert(data, tmp_path, "/O=system:masters/CN=ops", days="-1")
    answer = requests.get(endpoint.url + "/api/v1/namespaces", cert=(cert, key), verify=endpoint.ca, timeout=30)
    assert answer.status_code == 401


def test_a_certificate_from_another_ca_is_refused_in_the_handshake(server: tuple[Endpoint, Path],
                                                                    tmp_path: Path) -> None:
    endpoint, data = server
    other_cert, other_key = str(tmp_path / "other-ca.crt"), str(tmp_path / "other-ca.key")
    openssl.run("req", "-x509", *openssl.EC_KEY, "-keyout", other_key, "-out", other_cert, "-days", "30",
                "-subj", "/CN=other-ca", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")
    cert, key = client_cert(data, tmp_path, "/O=system:masters/CN=ops", ca=(other_cert, other_key))
    with pytest.raises(requests.exceptions.ConnectionError):  # an SSLError, or (TLS 1.3) the connection closed
        requests.get(endpoint.url + "/api/v1/namespaces", cert=(cert, key), verify=endpoint.ca, timeout=30)


def test_a_serving_only_certificate_is_refused(server: tuple[Endpoint, Path], tmp_path: Path) -> None:
    endpoint, data = server
    serving = (str(data / "tls" / "serving.crt"), str(data / "tls" / "serving.key"))
    with pytest.raises(requests.exceptions.ConnectionError):  # an SSLError, or (TLS 1.3) the connection closed
        requests.get(endpoint.url + "/api/v1/namespaces", cert=serving, verify=endpoint.ca, timeout=30)


def test_bearer_tokens_still_work_without_a_certificate(server: tuple[Endpoint, Path]) -> None:
    endpoint, _ = server
    assert endpoint.request("GET", "/api/v1/namespaces").status_code == 200
    assert requests.get(endpoint.url + "/api/v1/namespaces", verify=endpoint.ca, timeout=30).status_code == 401
