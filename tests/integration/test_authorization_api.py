"""RBAC, the reviews and impersonation against a real API server on 127.0.0.1, through the official Python
client: the built-in credentials keep full access, an impersonated user is held to RBAC with upstream's 403
messages, escalation is refused, the bootstrap policy is reconciled at start (missing rules added, nothing
removed, `autoupdate: "false"` left alone), and the aggregation controller fills `view`."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from control.client.informer import InformerFactory
from control.client.rest import RESTClient
from control.controllers.clusterroleaggregation.controller import ClusterRoleAggregationController
from tests.support.apiserver import Endpoint, ThreadServer, running_server
from tests.support.polling import wait_until

RBAC = "rbac.authorization.k8s.io"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    with running_server(str(tmp_path_factory.mktemp("authz"))) as endpoint:
        yield endpoint


def api_client(endpoint: Endpoint, **impersonate: str) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config(config_file=endpoint.kubeconfig, client_configuration=configuration)
    api_client = client.ApiClient(configuration)
    if "user" in impersonate:
        api_client.set_default_header("Impersonate-User", impersonate["user"])
    return api_client


@pytest.fixture(scope="module")
def admin(api: Endpoint) -> client.ApiClient:
    return api_client(api)


@pytest.fixture
def ns(admin: client.ApiClient) -> str:
    name = f"authz-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(admin).create_namespace({"metadata": {"name": name}})
    return name


def bind(admin: client.ApiClient, ns: str, user: str, cluster_role: str) -> None:
    client.RbacAuthorizationV1Api(admin).create_namespaced_role_binding(ns, {
        "metadata": {"name": f"{user}-{cluster_role}"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": cluster_role},
        "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user}]})


def forbidden(call) -> str:
    with pytest.raises(ApiException) as caught:
        call()
    assert caught.value.status == 403
    body = json.loads(caught.value.body)
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Forbidden", 403)
    return body["message"]


def test_built_in_credentials_keep_full_access(api: Endpoint, admin: client.ApiClient):
    assert client.CoreV1Api(admin).list_secret_for_all_namespaces() is not None
    node_token = open(f"{api.kubeconfig.rsplit('/', 1)[0]}/node-token").read().strip()
    response = api.request("GET", "/api/v1/secrets", headers={"Authorization": f"Bearer {node_token}"})
    assert response.status_code == 200


def test_an_impersonated_user_is_held_to_rbac(api: Endpoint, admin: client.ApiClient, ns: str):
    alice = client.CoreV1Api(api_client(api, user="alice"))
    assert forbidden(lambda: alice.list_namespaced_secret(ns)) == (
        f'secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "{ns}"')
    assert forbidden(lambda: alice.list_node()) == (
        'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope')
    response = api.request("GET", "/metrics", headers={"Impersonate-User": "alice"})
    assert response.status_code == 403
    assert response.json()["message"] == 'forbidden: User "alice" cannot get path "/metrics"'
    assert api.request("GET", "/apis", headers={"Impersonate-User": "alice"}).status_code == 200  # system:discovery
    client.RbacAuthorizationV1Api(admin).create_namespaced_role(ns, {
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}]})
    client.RbacAuthorizationV1Api(admin).create_namespaced_role_binding(ns, {
        "metadata": {"name": "alice"}, "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "pod-reader"},
        "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "alice"}]})
    assert alice.list_namespaced_pod(ns).items == []
    assert forbidden(lambda: alice.list_namespaced_pod("default")).endswith('in the namespace "default"')


def test_escalation_is_refused(api: Endpoint, admin: client.ApiClient, ns: str):
    client.RbacAuthorizationV1Api(admin).create_cluster_role({  # what `admin` aggregates, in short
        "metadata": {"name": f"role-writer-{ns}"},
        "rules": [{"apiGroups": [RBAC], "resources": ["roles", "rolebindings"],
                   "verbs": ["create", "get", "list", "update", "delete"]},  # not `*`: that has escalate and bind
                  {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})
    bind(admin, ns, "carol", f"role-writer-{ns}")
    carol = client.RbacAuthorizationV1Api(api_client(api, user="carol"))
    role = {"metadata": {"name": "nodes"}, "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]}
    message = forbidden(lambda: carol.create_namespaced_role(ns, role))
    assert message == (f'roles.{RBAC} "nodes" is forbidden: user "carol" (groups=["system:authenticated"]) is '
                       'attempting to grant RBAC permissions not currently held:\n'
                       '{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}')
    carol_binding = {"metadata": {"name": "root"}, "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole",
                                                               "name": "cluster-admin"},
                     "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "carol"}]}
    assert "not currently held" in forbidden(lambda: carol.create_namespaced_role_binding(ns, carol_binding))
    role["rules"][0]["resources"] = ["pods"]
    assert carol.create_namespaced_role(ns, role).metadata.name == "nodes"  # within what carol holds


def test_reviews(api: Endpoint, admin: client.ApiClient, ns: str):
    authorization = client.AuthorizationV1Api(admin)
    mine = authorization.create_self_subject_access_review(
        {"spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}})
    assert mine.status.allowed is True
    theirs = authorization.create_subject_access_review(
        {"spec": {"user": "dave", "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": ns}}})
    assert theirs.status.allowed is False
    bind(admin, ns, "dave", "edit")
    local = authorization.create_namespaced_local_subject_access_review(ns, {
        "metadata": {"namespace": ns},
        "spec": {"user": "dave", "resourceAttributes": {"verb": "create", "resource": "roles", "group": RBAC,
                                                        "namespace": ns}}})
    assert local.status.allowed is False  # edit never grants roles
    rules = client.AuthorizationV1Api(api_client(api, user="dave")).create_self_subject_rules_review(
        {"spec": {"namespace": ns}})
    assert any("selfsubjectaccessreviews" in (rule.resources or []) for rule in rules.status.resource_rules)
    assert rules.status.incomplete is False
    who = client.AuthenticationV1Api(admin).create_self_subject_review({})
    assert who.status.user_info.username == "system:admin"
    assert who.status.user_info.groups == ["system:masters", "system:authenticated"]


def test_aggregation_controller_fills_view(api: Endpoint, admin: client.ApiClient, ns: str):
    stop = threading.Event()
    with RESTClient.from_kubeconfig(api.kubeconfig) as rest:
        factory = InformerFactory(rest)
        controller = ClusterRoleAggregationController(rest, factory)
        factory.start(stop)
        thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
        thread.start()
        try:
            rbac = client.RbacAuthorizationV1Api(admin)
            assert wait_until(lambda: rbac.read_cluster_role("view").rules, timeout=20)
            def sizes() -> list[int]:
                return [len(rbac.read_cluster_role(name).rules or []) for name in ("admin", "edit", "view")]

            assert wait_until(lambda: sizes()[0] > sizes()[1] > sizes()[2], timeout=20)
            bind(admin, ns, "erin", "view")
            erin = client.CoreV1Api(api_client(api, user="erin"))
            assert erin.list_namespaced_pod(ns).items == []
            assert forbidden(lambda: erin.list_namespaced_secret(ns))
        finally:
            stop.set()
            thread.join(10)


def test_bootstrap_policy_is_reconciled_at_start(tmp_path):
    server = ThreadServer(str(tmp_path))
    endpoint = server.start()
    try:
        rbac = client.RbacAuthorizationV1Api(api_client(endpoint))
        discovery = rbac.read_cluster_role("system:discovery")
        assert discovery.metadata.annotations == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
        discovery.rules = [{"verbs": ["get"], "nonResourceURLs": ["/mine"]}]
        rbac.replace_cluster_role("system:discovery", discovery)
        basic = rbac.read_cluster_role("system:basic-user")
        basic.metadata.annotations["rbac.authorization.kubernetes.io/autoupdate"] = "false"
        basic.rules = []
        rbac.replace_cluster_role("system:basic-user", basic)
        rbac.delete_cluster_role_binding("system:kube-dns")
    finally:
        server.stop()
    server = ThreadServer(str(tmp_path))
    endpoint = server.start()
    try:
        rbac = client.RbacAuthorizationV1Api(api_client(endpoint))
        urls = [u for rule in rbac.read_cluster_role("system:discovery").rules for u in rule.non_resource_urls]
        assert urls[0] == "/mine" and "/apis/*" in urls  # kept and completed
        assert not rbac.read_cluster_role("system:basic-user").rules  # autoupdate "false": left alone
        assert rbac.read_cluster_role_binding("system:kube-dns").subjects[0].name == "kube-dns"
    finally:
        server.stop()
