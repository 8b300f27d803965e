"""The kubelet's HTTPS API against a real API server (in a thread): the kubelet gets its serving certificate
signed through the join channel (node token), and only callers the cluster vouches for get past /healthz —
the API server's kubelet-client certificate, or a bearer token a TokenReview accepts. Without credentials,
with a wrong token, or with a certificate from another CA (or the kubelet's own serving-only one) nothing
runs (the handlers record every call). The API server's pods/log proxy reaches the kubelet with its client
certificate. No root or Docker needed, but it listens on real sockets like the other integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from control.client.kubeconfig import ClientConfig
from control.client.rest import RESTClient
from control.util import openssl
from nodeagent import servingcert
from nodeagent.authn import TokenReviewCache
from nodeagent.authz import SubjectAccessReviewCache
from nodeagent.parts import SERVING_CERT_PATH, SUBJECT_ACCESS_REVIEWS_PATH, TOKEN_REVIEWS_PATH
from nodeagent.server import KubeletServer
from tests.support.apiserver import running_server

NODE = "sktest-authn"
PROTECTED = ["/pods", "/stats/summary", "/containerLogs/default/web/app"]


class NoPods:
    """The runtime the summary and logs handlers consult, recording that they ran."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def list_pods(self) -> list:
        self.calls.append("runtime.list_pods")
        return []


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    data = tmp_path_factory.mktemp("apiserver")
    with running_server(str(data)) as endpoint:
        node_token = (data / "node-token").read_text().strip()
        with RESTClient(ClientConfig(server=endpoint.url, token=node_token, ca_file=endpoint.ca)) as node_client, \
                RESTClient.from_kubeconfig(endpoint.kubeconfig) as admin:
            yield {"data": data, "endpoint": endpoint, "node_client": node_client, "admin": admin,
                   "node_token": node_token}


@pytest.fixture
def kubelet(cluster: dict[str, Any], tmp_path: Path, cleanup) -> dict[str, Any]:
    client: RESTClient = cluster["node_client"]
    ca = cluster["endpoint"].ca
    tls = servingcert.ensure(str(tmp_path), NODE, addresses=["127.0.0.1"], ca_file=ca,
                             sign=lambda body: client.create(SERVING_CERT_PATH, body)["certificate"])
    reviews: list[str] = []

    def review(token: str) -> dict:
        reviews.append(token)
        return client.create(TOKEN_REVIEWS_PATH, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                                  "spec": {"token": token}})

    access_reviews: list[dict[str, Any]] = []

    def access_review(spec: dict[str, Any]) -> dict:
        access_reviews.append(spec)
        return client.create(SUBJECT_ACCESS_REVIEWS_PATH, {"apiVersion": "authorization.k8s.io/v1",
                                                           "kind": "SubjectAccessReview", "spec": spec})

    calls: list[str] = []

    def find_container(namespace: str, pod: str, container: str) -> str | None:
        calls.append(f"logs {namespace}/{pod}/{container}")
        return None

    server = KubeletServer("127.0.0.1", 0, tls=tls, authenticate_token=TokenReviewCache(review).authenticate,
                           authorize=SubjectAccessReviewCache(access_review, node=NODE).allowed,
                           pods=lambda: calls.append("pods") or [], runtime=NoPods(calls),  # type: ignore[arg-type]
                           health=lambda: [], find_container=find_container, node_name=NODE)
    server.start()
    cleanup(server.stop)
    return {"base": f"https://127.0.0.1:{server.port}", "calls": calls, "reviews": reviews, "tls": tls, "ca": ca,
            "port": server.port, "access_reviews": access_reviews}


def other_ca_client_cert(directory: Path) -> tuple[str, str]:
    """A client certificate (CN kube-apiserver-kubelet-client, O system:masters, clientAuth) from a CA
    made here: everything right but the issuer."""
    ca_key, ca_crt = str(directory / "evil-ca.key"), str(directory / "evil-ca.crt")
    openssl.run("req", "-x509", *openssl.EC_KEY, "-keyout", ca_key, "-out", ca_crt, "-days", "1", "-subj",
                "/CN=evil-ca", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign")
    key, csr, crt = (str(directory / f"evil-client.{ext}") for ext in ("key", "csr", "crt"))
    openssl.run("req", "-new", *openssl.EC_KEY, "-keyout", key, "-out", csr,
                "-subj", "/O=system:masters/CN=kube-apiserver-kubelet-client")
    ext = directory / "client.ext"
    ext.write_text("extendedKeyUsage=clientAuth\n")
    openssl.run("x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial", "-out", crt,
                "-days", "1", "-extfile", str(ext))
    return crt, key


def test_without_credentials_only_healthz_answers_and_nothing_runs(kubelet: dict[str, Any]) -> None:
    base, ca = kubelet["base"], kubelet["ca"]
    assert requests.get(f"{base}/healthz", verify=ca, timeout=5).text == "ok"  # serving cert verifies for 127.0.0.1
    for path in PROTECTED:
        answer = requests.get(base + path, verify=ca, timeout=5)
        assert answer.status_code == 401, path
        assert answer.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                 "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
        assert requests.post(base + path, verify=ca, timeout=5).status_code == 401
    with pytest.raises(requests.ConnectionError):  # no plain http on the kubelet's port
        requests.get(f"http://127.0.0.1:{kubelet['port']}/pods", timeout=5)
    assert kubelet["calls"] == [] and kubelet["reviews"] == []


def test_a_wrong_token_gets_401_and_nothing_runs(kubelet: dict[str, Any]) -> None:
    for path in PROTECTED:
        answer = requests.get(kubelet["base"] + path, headers={"Authorization": "Bearer not-a-token"},
                              verify=kubelet["ca"], timeout=5)
        assert answer.status_code == 401 and answer.json()["reason"] == "Unauthorized"
    assert kubelet["calls"] == []
    assert kubelet["reviews"] == ["not-a-token"]  # asked the API server once, the denial cached


def test_a_certificate_from_another_ca_is_refused_in_the_handshake(kubelet: dict[str, Any], tmp_path: Path) -> None:
    """With TLS 1.3 the client learns of the refusal after its side of the handshake: an SSL alert or the
    connection closed without an answer, depending on timing; either way no HTTP answer and nothing runs."""
    cert = other_ca_client_cert(tmp_path)
    for path in PROTECTED:
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(kubelet["base"] + path, cert=cert, verify=kubelet["ca"], timeout=5)
    # the kubelet's own certificate, from the right CA but for serving only, is no client certificate either
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(kubelet["base"] + "/pods", cert=(kubelet["tls"].cert_file, kubelet["tls"].key_file),
                     verify=kubelet["ca"], timeout=5)
    assert kubelet["calls"] == [] and kubelet["reviews"] == []


def test_the_kubelet_client_certificate_and_valid_tokens_get_through(kubelet: dict[str, Any],
                                                                     cluster: dict[str, Any]) -> None:
    tls_dir = cluster["data"] / "tls"
    client_cert = (str(tls_dir / "apiserver-kubelet-client.crt"), str(tls_dir / "apiserver-kubelet-client.key"))
    base, ca = kubelet["base"], kubelet["ca"]
    pods = requests.get(f"{base}/pods", cert=client_cert, verify=ca, timeout=5)
    assert pods.status_code == 200 and pods.json()["kind"] == "PodList"
    assert requests.get(f"{base}/containerLogs/default/web/app", cert=client_cert, verify=ca,
                        timeout=5).status_code == 404  # authenticated: the handler ran and found no pod
    assert kubelet["calls"] == ["pods", "pods"] and kubelet["reviews"] == []  # the logs handler listed the pods
    for token in (cluster["endpoint"].token, cluster["node_token"]):
        answer = requests.get(f"{base}/stats/summary", headers={"Authorization": f"Bearer {token}"}, verify=ca,
                              timeout=10)
        assert answer.status_code == 200 and answer.json()["node"]["nodeName"] == NODE
    assert kubelet["reviews"] == [cluster["endpoint"].token, cluster["node_token"]]
    requests.get(f"{base}/pods", headers={"Authorization": f"Bearer {cluster['endpoint'].token}"}, verify=ca, timeout=5)
    assert len(kubelet["reviews"]) == 2  # the allowed answer is cached


def test_the_api_servers_log_proxy_presents_its_client_certificate(kubelet: dict[str, Any],
                                                                   cluster: dict[str, Any], cleanup) -> None:
    admin: RESTClient = cluster["admin"]
    admin.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    cleanup(lambda: admin.delete(f"/api/v1/nodes/{NODE}"))
    node = admin.get(f"/api/v1/nodes/{NODE}")
    node["status"] = {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                      "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet["port"]}}}
    admin.update(f"/api/v1/nodes/{NODE}/status", node)
    admin.create("/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                                                     "spec": {"nodeName": NODE, "containers": [
                                                         {"name": "app", "image": "slimkube/busybox:1"}]}})
    cleanup(lambda: admin.delete("/api/v1/namespaces/default/pods/web", grace_period_seconds=0))
    endpoint = cluster["endpoint"]
    answer = endpoint.request("GET", "/api/v1/namespaces/default/pods/web/log")
    # the kubelet answered (404: this fake kubelet runs no pods) instead of 401: the client cert worked
    assert answer.status_code == 404 and answer.json()["message"] == 'pod "web" does not exist'
    assert kubelet["calls"] == ["pods"] and kubelet["reviews"] == []  # the logs handler listed the pods


def cluster_client_cert(cluster: dict[str, Any], directory: Path, user: str) -> tuple[str, str]:
    """A client certificate for `user` (no groups) from the cluster's CA."""
    tls_dir = cluster["data"] / "tls"
    key, csr, crt = (str(directory / f"{user}.{ext}") for ext in ("key", "csr", "crt"))
    openssl.run("req", "-new", *openssl.EC_KEY, "-keyout", key, "-out", csr, "-subj", f"/CN={user}")
    ext = directory / "client.ext"
    ext.write_text("extendedKeyUsage=clientAuth\n")
    openssl.run("x509", "-req", "-in", csr, "-CA", str(tls_dir / "ca.crt"), "-CAkey", str(tls_dir / "ca.key"),
                "-CAcreateserial", "-out", crt, "-days", "1", "-extfile", str(ext))
    return crt, key


def test_an_authenticated_caller_needs_the_node_subresource(kubelet: dict[str, Any], cluster: dict[str, Any],
                                                            tmp_path: Path, cleanup) -> None:
    """Authenticated is not authorized: without `nodes/proxy` (or `nodes/stats`, …) on this node the answer is
    upstream's plain-text 403 and nothing runs; a ClusterRole granting it opens exactly that."""
    base, ca, admin = kubelet["base"], kubelet["ca"], cluster["admin"]
    mallory = cluster_client_cert(cluster, tmp_path, "mallory")
    for method, path, verb, subresource in (("GET", "/pods", "get", "pods"), ("GET", "/stats/summary", "get", "stats"),
                                            ("GET", "/metrics", "get", "metrics"),
                                            ("POST", "/exec/default/web/app", "create", "proxy"),
                                            ("GET", "/containerLogs/default/web/app", "get", "proxy")):
        answer = requests.request(method, base + path, cert=mallory, verify=ca, timeout=10)
        assert answer.status_code == 403, path
        assert answer.text == f"Forbidden (user=mallory, verb={verb}, resource=nodes, subresource={subresource})"
    assert kubelet["calls"] == []
    assert kubelet["access_reviews"][0] == {
        "resourceAttributes": {"verb": "get", "version": "v1", "resource": "nodes", "subresource": "pods",
                               "name": NODE},
        "user": "mallory", "groups": []}

    grant(admin, "trent", "nodes/stats", cleanup)
    grant(admin, "victor", "nodes/proxy", cleanup)
    trent, victor = cluster_client_cert(cluster, tmp_path, "trent"), cluster_client_cert(cluster, tmp_path, "victor")
    assert requests.get(f"{base}/stats/summary", cert=trent, verify=ca, timeout=10).status_code == 200
    assert requests.get(f"{base}/pods", cert=trent, verify=ca, timeout=10).status_code == 403
    asked = len(kubelet["access_reviews"])
    assert requests.get(f"{base}/stats/summary", cert=trent, verify=ca, timeout=10).status_code == 200
    assert len(kubelet["access_reviews"]) == asked  # the allowed answer is cached
    pods = requests.get(f"{base}/pods", cert=victor, verify=ca, timeout=10)  # fine-grained falls back to proxy
    assert pods.status_code == 200 and pods.json()["kind"] == "PodList"
    assert requests.get(f"{base}/stats/summary", cert=victor, verify=ca, timeout=10).status_code == 403


def grant(admin: RESTClient, user: str, subresource: str, cleanup) -> None:
    """A ClusterRole allowing get on `subresource` of nodes, bound to `user`."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    admin.create(f"{rbac}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": f"kubelet-{user}"},
        "rules": [{"apiGroups": [""], "resources": [subresource], "verbs": ["get"]}]})
    cleanup(lambda: admin.delete(f"{rbac}/clusterroles/kubelet-{user}"))
    admin.create(f"{rbac}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"kubelet-{user}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"kubelet-{user}"},
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]})
    cleanup(lambda: admin.delete(f"{rbac}/clusterrolebindings/kubelet-{user}"))


def test_tokenreview_api_answers_for_the_servers_tokens(cluster: dict[str, Any]) -> None:
    endpoint = cluster["endpoint"]
    for token, authenticated in ((endpoint.token, True), (cluster["node_token"], True), ("guess", False)):
        answer = endpoint.request("POST", TOKEN_REVIEWS_PATH, json={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
        assert answer.status_code == 201 and answer.json()["status"]["authenticated"] is authenticated
    unauthenticated = requests.post(endpoint.url + TOKEN_REVIEWS_PATH, json={"spec": {"token": endpoint.token}},
                                    verify=endpoint.verify, timeout=5)
    assert unauthenticated.status_code == 401
    refused = requests.post(endpoint.url + SERVING_CERT_PATH, json={"nodeName": "x", "csr": "x"},
                            verify=endpoint.verify, timeout=5)
    assert refused.status_code == 401  # no certificate for anybody without the node token

