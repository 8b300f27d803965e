"""A node's join through a CertificateSigningRequest against a real API server (in a thread) with the
certificate controllers: the join token buys the node's own client certificate (`system:node:<name>`, kept
0600 in the data dir and reused), a second joiner claiming the same name with the shared token is refused,
and the first node joins again with its node password after losing its certificate; the join token itself is
refused everything but CSRs and what a worker's kube-proxy reads (nodeagent/bootstrap.py,
control/controllers/certificates/, docs/identity.md)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from nodeagent import bootstrap
from tests.support.apiserver import Endpoint, running_server
from tests.support.ca_signing import certificate_controllers

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Endpoint, Path]]:
    data = tmp_path_factory.mktemp("apiserver")
    with running_server(str(data)) as endpoint, certificate_controllers(endpoint.kubeconfig, str(data / "tls")):
        yield endpoint, data


def whoami(endpoint: Endpoint, config) -> str:
    answer = requests.post(endpoint.url + "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                           cert=(config.cert_file, config.key_file), verify=config.ca_file, timeout=30,
                           json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert answer.status_code == 201, answer.text
    return answer.json()["status"]["userInfo"]["username"]


def csr_count(endpoint: Endpoint) -> int:
    return len(endpoint.request("GET", CSRS).json()["items"])


def test_join_kept_refused_for_a_second_claimant_and_joined_again(cluster: tuple[Endpoint, Path],
                                                                  tmp_path: Path) -> None:
    endpoint, data = cluster
    token = (data / "node-token").read_text().strip()
    first_dir, second_dir = str(tmp_path / "first"), str(tmp_path / "second")
    join = bootstrap.join(endpoint.url, token, data_dir=first_dir)
    config = bootstrap.node_credentials(join, "worker-a", data_dir=first_dir, timeout=60)
    assert config.token is None and whoami(endpoint, config) == "system:node:worker-a"
    files = bootstrap.node_certificate(first_dir)
    for path in (files.cert_file, files.key_file, files.node_password_key):
        assert os.stat(path).st_mode & 0o077 == 0, path
    before = csr_count(endpoint)
    assert bootstrap.node_credentials(join, "worker-a", data_dir=first_dir) == config  # kept: no new request
    assert csr_count(endpoint) == before

    intruder = bootstrap.join(endpoint.url, token, data_dir=second_dir)
    with pytest.raises(bootstrap.BootstrapError, match="denied: NodePasswordMismatch"):
        bootstrap.node_credentials(intruder, "worker-a", data_dir=second_dir, timeout=60)
    assert not os.path.exists(bootstrap.node_certificate(second_dir).cert_file)

    os.unlink(files.cert_file)  # the first node lost its certificate but kept its node password
    again = bootstrap.node_credentials(join, "worker-a", data_dir=first_dir, timeout=60)
    assert whoami(endpoint, again) == "system:node:worker-a"


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/api/v1/namespaces/kube-system/secrets"),
    ("GET", "/api/v1/namespaces/kube-system/secrets/worker-a.node-password.slimkube"),
    ("GET", "/api/v1/pods"),
    ("GET", "/api/v1/namespaces/default/configmaps"),
    ("POST", "/api/v1/nodes"),
    ("PATCH", "/api/v1/nodes/worker-a"),
    ("POST", "/api/v1/namespaces/default/pods"),
    ("PUT", f"{CSRS}/x/approval"),
    ("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"),
])
def test_the_join_token_is_refused_everything_but_its_csrs(cluster: tuple[Endpoint, Path], method: str,
                                                           path: str) -> None:
    endpoint, data = cluster
    token = (data / "node-token").read_text().strip()
    answer = requests.request(method, endpoint.url + path, headers={"Authorization": f"Bearer {token}",
                                                                    "Content-Type": "application/merge-patch+json"},
                              json={}, verify=endpoint.ca, timeout=30)
    assert answer.status_code == 403, answer.text
    assert 'User "system:bootstrap:node-token"' in answer.json()["message"]
