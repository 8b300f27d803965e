"""Service account tokens against a real API server on 127.0.0.1: TokenRequest (defaults, validation,
bindings), the token as a credential (user, groups, RBAC: no binding → 403 on Secrets, `view` → pods yes,
Secrets no), a pod-bound token refused once its pod is gone, OIDC discovery and its JWKS verifying a token,
TokenReview answering for service account tokens, `kubectl create token` (the newest kubectl), ServiceAccount
admission through the server, and legacy token Secrets filled by the tokens controller."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator

import jwt
import pytest
from kubernetes import client, config

from control.client.informer import InformerFactory
from control.client.rest import RESTClient
from control.controllers.clusterroleaggregation.controller import ClusterRoleAggregationController
from control.controllers.serviceaccounts.tokens import TokensController
from control.util import satoken
from tests.support.apiserver import Endpoint, running_server
from tests.support.polling import wait_until

RBAC = "rbac.authorization.k8s.io"
ISSUER = "https://kubernetes.default.svc.cluster.local"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("satokens")), disable_admission_plugins=()) as endpoint:
        stop = threading.Event()  # `view` gets its rules from the aggregation controller
        with RESTClient.from_kubeconfig(endpoint.kubeconfig) as rest:
            factory = InformerFactory(rest)
            controller = ClusterRoleAggregationController(rest, factory)
            factory.start(stop)
            threading.Thread(target=controller.run, args=(stop,), daemon=True).start()
            try:
                yield endpoint
            finally:
                stop.set()


@pytest.fixture(scope="module")
def admin(api: Endpoint) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config(config_file=api.kubeconfig, client_configuration=configuration)
    return client.ApiClient(configuration)


@pytest.fixture
def ns(admin: client.ApiClient) -> str:
    name = f"sat-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(admin)
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_service_account(name, {"metadata": {"name": "robot"}})
    return name


def token_request(api: Endpoint, ns: str, name: str, spec: dict) -> tuple[int, dict]:
    admin_token = api.token
    response = api.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token",
                           headers={"Authorization": f"Bearer {admin_token}"},
                           json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
    return response.status_code, response.json()


def as_token(api: Endpoint, token: str, method: str, path: str) -> int:
    return api.request(method, path, headers={"Authorization": f"Bearer {token}"}).status_code


def test_token_request_defaults_and_claims(api: Endpoint, ns: str):
    code, answer = token_request(api, ns, "robot", {})
    assert code == 201, answer
    assert answer["spec"]["expirationSeconds"] == 3600 and answer["spec"]["audiences"] == [ISSUER]
    claims = jwt.decode(answer["status"]["token"], options={"verify_signature": False})
    assert claims["iss"] == ISSUER and claims["aud"] == [ISSUER]
    assert claims["sub"] == f"system:serviceaccount:{ns}:robot"
    assert claims["exp"] - claims["iat"] == 3600
    assert claims["kubernetes.io"]["namespace"] == ns
    assert claims["kubernetes.io"]["serviceaccount"]["name"] == "robot"
    code, answer = token_request(api, ns, "robot", {"expirationSeconds": 60})
    assert code == 422 and "may not specify a duration less than 10 minutes" in answer["message"]
    code, answer = token_request(api, ns, "nobody", {})
    assert code == 404


def test_a_token_is_the_service_account_and_held_to_rbac(api: Endpoint, admin: client.ApiClient, ns: str):
    _, answer = token_request(api, ns, "robot", {})
    token = answer["status"]["token"]
    whoami = api.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                         headers={"Authorization": f"Bearer {token}"},
                         json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).json()
    user = whoami["status"]["userInfo"]
    assert user["username"] == f"system:serviceaccount:{ns}:robot"
    assert {"system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"} <= set(user["groups"])
    denied = api.request("GET", f"/api/v1/namespaces/{ns}/secrets", headers={"Authorization": f"Bearer {token}"})
    assert denied.status_code == 403
    assert denied.json()["message"] == (f'secrets is forbidden: User "system:serviceaccount:{ns}:robot" cannot list '
                                        f'resource "secrets" in API group "" in the namespace "{ns}"')
    client.RbacAuthorizationV1Api(admin).create_namespaced_role_binding(ns, {
        "metadata": {"name": "robot-view"}, "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": ns}]})
    assert wait_until(lambda: as_token(api, token, "GET", f"/api/v1/namespaces/{ns}/pods") == 200, timeout=20)
    assert as_token(api, token, "GET", f"/api/v1/namespaces/{ns}/secrets") == 403
    assert as_token(api, "eyJ" + token[3:-4] + "AAAA", "GET", f"/api/v1/namespaces/{ns}/pods") == 401


def test_a_pod_bound_token_dies_with_its_pod(api: Endpoint, admin: client.ApiClient, ns: str):
    core = client.CoreV1Api(admin)
    pod = core.create_namespaced_pod(ns, {"metadata": {"name": "p"}, "spec": {
        "serviceAccountName": "robot", "automountServiceAccountToken": False,
        "containers": [{"name": "c", "image": "slimkube/busybox:1"}]}})
    code, answer = token_request(api, ns, "robot", {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1",
                                                                      "name": "p", "uid": pod.metadata.uid}})
    assert code == 201, answer
    token = answer["status"]["token"]
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["kubernetes.io"]["pod"] == {"name": "p", "uid": pod.metadata.uid}
    review = api.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                         headers={"Authorization": f"Bearer {api.token}"},
                         json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                               "spec": {"token": token}}).json()
    assert review["status"]["authenticated"] is True
    assert review["status"]["user"]["extra"]["authentication.kubernetes.io/pod-name"] == ["p"]
    assert as_token(api, token, "GET", "/api") == 200
    core.create_namespaced_service_account(ns, {"metadata": {"name": "other"}})
    code, answer = token_request(api, ns, "other", {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1",
                                                                        "name": "p"}})
    assert code == 400 and "different serviceaccount name" in answer["message"]
    core.delete_namespaced_pod("p", ns, grace_period_seconds=0)
    assert wait_until(lambda: as_token(api, token, "GET", "/api") == 401, timeout=10)


def test_a_token_dies_with_its_service_account(api: Endpoint, admin: client.ApiClient, ns: str):
    _, answer = token_request(api, ns, "robot", {})
    token = answer["status"]["token"]
    assert as_token(api, token, "GET", "/api") == 200
    client.CoreV1Api(admin).delete_namespaced_service_account("robot", ns)
    assert as_token(api, token, "GET", "/api") == 401


def test_oidc_discovery_and_jwks_verify_a_token(api: Endpoint, ns: str):
    _, answer = token_request(api, ns, "robot", {})
    own = {"Authorization": f"Bearer {answer['status']['token']}"}  # system:service-account-issuer-discovery
    document = api.request("GET", "/.well-known/openid-configuration", headers=own).json()
    assert document["issuer"] == ISSUER and document["jwks_uri"].endswith("/openid/v1/jwks")
    assert document["id_token_signing_alg_values_supported"] == ["RS256"]
    keys = api.request("GET", "/openid/v1/jwks", headers=own).json()["keys"]
    _, answer = token_request(api, ns, "robot", {"audiences": ["vault"]})
    token = answer["status"]["token"]
    header = jwt.get_unverified_header(token)
    key = jwt.PyJWK(next(k for k in keys if k["kid"] == header["kid"]))
    claims = jwt.decode(token, key.key, algorithms=["RS256"], audience="vault", issuer=ISSUER)
    assert claims["aud"] == ["vault"]
    assert as_token(api, token, "GET", "/api") == 401  # not for the API server's audience


def test_kubectl_create_token(api: Endpoint, ns: str):
    result = subprocess.run(["kubectl", "--kubeconfig", api.kubeconfig, "-n", ns, "create", "token", "robot",
                             "--duration", "20m"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["exp"] - claims["iat"] == 1200
    assert as_token(api, token, "GET", f"/api/v1/namespaces/{ns}/serviceaccounts/robot") in (200, 403)
    assert as_token(api, token, "GET", "/api") == 200


def test_service_account_admission(api: Endpoint, admin: client.ApiClient, ns: str):
    core = client.CoreV1Api(admin)
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "slimkube/busybox:1"}]}}
    with pytest.raises(client.ApiException) as refused:  # no `default` account: no controller made it here
        core.create_namespaced_pod(ns, pod)
    assert refused.value.status == 403
    assert json.loads(refused.value.body)["message"] == (
        f'pods "p" is forbidden: error looking up service account {ns}/default: serviceaccount "default" not found')
    core.create_namespaced_service_account(ns, {"metadata": {"name": "default"}})
    created = core.create_namespaced_pod(ns, pod).to_dict()
    assert created["spec"]["service_account_name"] == "default"
    (volume,) = created["spec"]["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == len("kube-api-access-") + 5
    sources = volume["projected"]["sources"]
    token = sources[0]["service_account_token"]
    assert (token["audience"], token["expiration_seconds"], token["path"]) == (None, 3607, "token")
    assert sources[1]["config_map"]["name"] == "kube-root-ca.crt"
    assert sources[2]["downward_api"]["items"][0]["field_ref"]["field_path"] == "metadata.namespace"
    (mount,) = created["spec"]["containers"][0]["volume_mounts"]
    assert (mount["mount_path"], mount["name"], mount["read_only"]) == (
        "/var/run/secrets/kubernetes.io/serviceaccount", volume["name"], True)
    core.patch_namespaced_service_account("robot", ns, {"automountServiceAccountToken": False})
    quiet = core.create_namespaced_pod(ns, {"metadata": {"name": "q"}, "spec": {
        "serviceAccountName": "robot", "containers": [{"name": "c", "image": "slimkube/busybox:1"}]}}).to_dict()
    assert quiet["spec"]["volumes"] is None and quiet["spec"]["containers"][0]["volume_mounts"] is None


def test_legacy_token_secrets_are_filled_and_die_with_their_secret(api: Endpoint, admin: client.ApiClient, ns: str):
    key_file = os.path.join(os.path.dirname(api.kubeconfig), "tls", "service.key")
    stop = threading.Event()
    with RESTClient.from_kubeconfig(api.kubeconfig) as rest:
        factory = InformerFactory(rest)
        controller = TokensController(rest, factory, key=satoken.load_key(key_file), root_ca="CA PEM")
        factory.start(stop)
        threading.Thread(target=controller.run, args=(stop,), daemon=True).start()
        try:
            core = client.CoreV1Api(admin)
            core.create_namespaced_secret(ns, {"metadata": {"name": "robot-token", "annotations": {
                "kubernetes.io/service-account.name": "robot"}}, "type": "kubernetes.io/service-account-token"})
            assert wait_until(lambda: (core.read_namespaced_secret("robot-token", ns).data or {}).get("token"),
                              timeout=20)
            secret = core.read_namespaced_secret("robot-token", ns)
            account = core.read_namespaced_service_account("robot", ns)
            assert secret.metadata.annotations["kubernetes.io/service-account.uid"] == account.metadata.uid
            assert base64.b64decode(secret.data["ca.crt"]) == b"CA PEM"
            assert base64.b64decode(secret.data["namespace"]).decode() == ns
            token = base64.b64decode(secret.data["token"]).decode()
            assert jwt.decode(token, options={"verify_signature": False})["iss"] == "kubernetes/serviceaccount"
            assert as_token(api, token, "GET", "/api") == 200
            core.create_namespaced_secret(ns, {"metadata": {"name": "orphan", "annotations": {
                "kubernetes.io/service-account.name": "nobody"}}, "type": "kubernetes.io/service-account-token"})
            names = lambda: {s.metadata.name for s in core.list_namespaced_secret(ns).items}  # noqa: E731
            assert wait_until(lambda: "orphan" not in names(), timeout=20)
            core.delete_namespaced_secret("robot-token", ns)
            assert as_token(api, token, "GET", "/api") == 401
        finally:
            stop.set()
