"""The RBAC authorizer, the chain, escalation prevention, reviews, impersonation and the bootstrap reconcile,
over an in-memory policy (upstream's cases: plugin/pkg/auth/authorizer/rbac/rbac_test.go,
pkg/registry/rbac/validation/rule_test.go, pkg/registry/rbac/reconciliation/reconcile_role_test.go)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from control.apiserver.authentication.tokens import ADMIN, NODE, UserInfo
from control.apiserver.authorization import bootstrappolicy, escalation, impersonation, reconcile, reviews
from control.apiserver.authorization.attributes import request_attributes
from control.apiserver.authorization.authorizer import Chain, PrivilegedGroups, SharedNodeCredential, forbidden
from control.apiserver.authorization.rbac import RBACAuthorizer
from control.apiserver.status import APIError

RBAC = bootstrappolicy.RBAC


class Policy:
    """PolicySource over dicts."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects

    def _of(self, kind: str, namespace: str = "") -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind and o["metadata"].get("namespace", "") == namespace]

    def cluster_role(self, name):
        return next((o for o in self._of("ClusterRole") if o["metadata"]["name"] == name), None)

    def role(self, namespace, name):
        return next((o for o in self._of("Role", namespace) if o["metadata"]["name"] == name), None)

    def cluster_role_bindings(self):
        return self._of("ClusterRoleBinding")

    def role_bindings(self, namespace):
        return self._of("RoleBinding", namespace)


def role(name: str, rules: list[dict[str, Any]], namespace: str = "") -> dict[str, Any]:
    return {"kind": "Role" if namespace else "ClusterRole",
            "metadata": {"name": name, **({"namespace": namespace} if namespace else {})}, "rules": rules}


def binding(name: str, ref_kind: str, ref: str, subjects: list[dict[str, str]], namespace: str = "") -> dict[str, Any]:
    return {"kind": "RoleBinding" if namespace else "ClusterRoleBinding",
            "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
            "roleRef": {"apiGroup": RBAC, "kind": ref_kind, "name": ref}, "subjects": subjects}


ALICE, BOB = UserInfo("alice", groups=("devs",)), UserInfo("bob")
SA = UserInfo("system:serviceaccount:ns:robot", groups=("system:serviceaccounts", "system:serviceaccounts:ns"))
POLICY = Policy([
    *bootstrappolicy.all_cluster_roles(), *bootstrappolicy.all_cluster_role_bindings(),
    role("pod-reader", [bootstrappolicy.rule(("get", "list"), "", "pods", "pods/log")]),
    role("secret-a", [bootstrappolicy.rule("get", "", "secrets", names=("a",))], namespace="ns"),
    binding("devs-read", "ClusterRole", "pod-reader", [bootstrappolicy.group("devs")], namespace="ns"),
    binding("alice-secret", "Role", "secret-a", [bootstrappolicy.user("alice")], namespace="ns"),
    binding("robot", "ClusterRole", "pod-reader", [{"kind": "ServiceAccount", "name": "robot"}], namespace="ns"),
    binding("dangling", "ClusterRole", "missing", [bootstrappolicy.user("bob")], namespace="ns"),
])
CHAIN = Chain([PrivilegedGroups(), SharedNodeCredential(NODE.username), RBACAuthorizer(POLICY)],
              RBACAuthorizer(POLICY))


def can(user: UserInfo, method: str, path: str, query: dict[str, str] | None = None) -> bool:
    return CHAIN.authorize(request_attributes(user, method, path, query or {})).allowed


@pytest.mark.parametrize(("user", "method", "path", "allowed"), [
    pytest.param(ADMIN, "DELETE", "/api/v1/nodes/n1", True, id="masters-anything"),
    pytest.param(NODE, "GET", "/api/v1/secrets", True, id="shared-node-credential-anything"),
    pytest.param(ALICE, "GET", "/api/v1/namespaces/ns/pods", True, id="group-binding"),
    pytest.param(ALICE, "GET", "/api/v1/namespaces/ns/pods/p/log", True, id="subresource-rule"),
    pytest.param(ALICE, "GET", "/api/v1/namespaces/other/pods", False, id="rolebinding-is-namespaced"),
    pytest.param(ALICE, "GET", "/api/v1/pods", False, id="rolebinding-not-cluster-wide"),
    pytest.param(ALICE, "GET", "/api/v1/namespaces/ns/secrets/a", True, id="resource-name"),
    pytest.param(ALICE, "GET", "/api/v1/namespaces/ns/secrets/b", False, id="other-name"),
    pytest.param(ALICE, "GET", "/api/v1/namespaces/ns/secrets", False, id="list-not-named"),
    pytest.param(ALICE, "GET", "/api", True, id="discovery-for-authenticated"),
    pytest.param(ALICE, "GET", "/healthz", True, id="public-info"),
    pytest.param(ALICE, "GET", "/metrics", False, id="no-monitoring"),
    pytest.param(SA, "GET", "/api/v1/namespaces/ns/pods", True, id="service-account-subject-defaults-namespace"),
    pytest.param(BOB, "GET", "/api/v1/namespaces/ns/pods", False, id="dangling-binding"),
    pytest.param(UserInfo("system:kube-proxy"), "GET", "/apis/discovery.k8s.io/v1/endpointslices", True,
                 id="node-proxier"),
    pytest.param(UserInfo("system:kube-proxy"), "GET", "/api/v1/secrets", False, id="node-proxier-no-secrets"),
])
def test_chain(user, method, path, allowed):
    assert can(user, method, path) is allowed


def test_denial_carries_resolution_errors():
    attributes = request_attributes(BOB, "GET", "/api/v1/namespaces/ns/pods", {})
    verdict = CHAIN.authorize(attributes)
    assert not verdict.allowed
    assert forbidden(attributes, verdict.reason).message == (
        'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "ns": '
        f'RBAC: clusterrole.{RBAC} "missing" not found')


@pytest.mark.parametrize(("attributes", "message"), [
    pytest.param(request_attributes(BOB, "GET", "/api/v1/namespaces/y/secrets", {}),
                 'secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "y"',
                 id="namespaced"),
    pytest.param(request_attributes(BOB, "GET", "/apis/apps/v1/deployments", {}),
                 'deployments.apps is forbidden: User "bob" cannot list resource "deployments" in API group "apps" '
                 'at the cluster scope', id="cluster"),
    pytest.param(request_attributes(BOB, "GET", "/api/v1/namespaces/y/pods/p/log", {}),
                 'pods "p" is forbidden: User "bob" cannot get resource "pods/log" in API group "" '
                 'in the namespace "y"',
                 id="named-subresource"),
    pytest.param(request_attributes(BOB, "GET", "/logs", {}), 'forbidden: User "bob" cannot get path "/logs"',
                 id="non-resource"),
])
def test_forbidden_messages(attributes, message):
    error = forbidden(attributes)
    assert (error.code, error.reason, error.message) == (403, "Forbidden", message)


def test_allowed_reason_names_the_binding():
    verdict = CHAIN.rbac.authorize(request_attributes(ALICE, "GET", "/api/v1/namespaces/ns/pods", {}))
    assert verdict.reason == 'RBAC: allowed by RoleBinding "devs-read/ns" of ClusterRole "pod-reader" to Group "devs"'


# -- escalation -----------------------------------------------------------------------------------


def test_role_within_held_permissions_is_allowed():
    escalation.check_role(POLICY, CHAIN, ALICE, "roles", role("r", [bootstrappolicy.rule("get", "", "pods")], "ns"))


def test_role_beyond_held_permissions_is_refused():
    wanted = role("r", [bootstrappolicy.rule(("get", "list"), "", "pods", "secrets")], "ns")
    with pytest.raises(APIError) as caught:
        escalation.check_role(POLICY, CHAIN, ALICE, "roles", wanted)
    assert caught.value.code == 403
    assert caught.value.message == (
        f'roles.{RBAC} "r" is forbidden: user "alice" (groups=["devs" "system:authenticated"]) is attempting to '
        'grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}')


def test_aggregated_cluster_role_needs_full_authority():
    wanted = {**role("agg", []), "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}}
    with pytest.raises(APIError):
        escalation.check_role(POLICY, CHAIN, ALICE, "clusterroles", wanted)
    escalation.check_role(POLICY, CHAIN, ADMIN, "clusterroles", wanted)
    escalation.check_role(POLICY, CHAIN, None, "clusterroles", wanted)  # the server itself


def test_escalate_verb_skips_the_check():
    policy = Policy([*POLICY.objects, role("escalator", [bootstrappolicy.rule("escalate", RBAC, "roles")]),
                     binding("b", "ClusterRole", "escalator", [bootstrappolicy.user("bob")], namespace="ns")])
    chain = Chain([RBACAuthorizer(policy)], RBACAuthorizer(policy))
    escalation.check_role(policy, chain, BOB, "roles", role("r", [bootstrappolicy.rule("*", "*", "*")], "ns"))


def test_binding_needs_the_role_or_bind():
    admin_binding = binding("x", "ClusterRole", "cluster-admin", [bootstrappolicy.user("alice")], namespace="ns")
    with pytest.raises(APIError) as caught:
        escalation.check_binding(POLICY, CHAIN, ALICE, "rolebindings", admin_binding)
    assert "is attempting to grant RBAC permissions not currently held" in caught.value.message
    escalation.check_binding(POLICY, CHAIN, ALICE, "rolebindings",
                             binding("y", "ClusterRole", "pod-reader", [bootstrappolicy.user("carol")], "ns"))
    policy = Policy([*POLICY.objects, role("binder", [bootstrappolicy.rule("bind", RBAC, "clusterroles",
                                                                           names=("cluster-admin",))]),
                     binding("b", "ClusterRole", "binder", [bootstrappolicy.user("alice")], namespace="ns")])
    chain = Chain([RBACAuthorizer(policy)], RBACAuthorizer(policy))
    escalation.check_binding(policy, chain, ALICE, "rolebindings", admin_binding)


def test_binding_to_a_missing_role_is_forbidden():
    with pytest.raises(APIError) as caught:
        escalation.check_binding(POLICY, CHAIN, ALICE, "rolebindings",
                                 binding("z", "Role", "nope", [bootstrappolicy.user("carol")], "ns"))
    assert caught.value.message == f'rolebindings.{RBAC} "z" is forbidden: role.{RBAC} "nope" not found'


# -- reviews and impersonation -----------------------------------------------------------------------


def test_subject_access_review():
    answer = reviews.subject_access_review({"spec": {"user": "alice", "groups": ["devs"], "resourceAttributes": {
        "verb": "list", "resource": "pods", "namespace": "ns"}}}, CHAIN)
    assert answer["status"]["allowed"] is True
    assert answer["status"]["reason"].startswith("RBAC: allowed by RoleBinding")


@pytest.mark.parametrize("spec", [
    pytest.param({"user": "a"}, id="no-attributes"),
    pytest.param({"user": "a", "resourceAttributes": {}, "nonResourceAttributes": {}}, id="both-attributes"),
    pytest.param({"resourceAttributes": {"verb": "get"}}, id="no-subject"),
])
def test_subject_access_review_validation(spec):
    with pytest.raises(APIError) as caught:
        reviews.subject_access_review({"spec": spec}, CHAIN)
    assert caught.value.code == 422


def test_self_subject_rules_review_lists_rbac_rules():
    answer = reviews.self_subject_rules_review({"spec": {"namespace": "ns"}}, ALICE, CHAIN)
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]} in \
        answer["status"]["resourceRules"]
    assert {"verbs": ["get"], "nonResourceURLs": ["/livez", "/readyz", "/healthz", "/version", "/version/"]} in \
        answer["status"]["nonResourceRules"]
    assert answer["status"]["incomplete"] is False
    bob = reviews.self_subject_rules_review({"spec": {"namespace": "ns"}}, BOB, CHAIN)
    assert bob["status"]["incomplete"] is True
    assert bob["status"]["evaluationError"] == f'clusterrole.{RBAC} "missing" not found'


def test_self_subject_review():
    answer = reviews.self_subject_review({}, ALICE, now=datetime(2026, 1, 2, tzinfo=UTC))
    assert answer["status"]["userInfo"] == {"username": "alice", "groups": ["devs", "system:authenticated"]}


def test_impersonation_checks_and_result():
    wanted = impersonation.parse([("Impersonate-User", "system:serviceaccount:ns:robot"),
                                  ("Impersonate-Extra-Scopes", "view")])
    questions = impersonation.checks(ALICE, wanted)
    assert [(q.verb, q.resource, q.subresource, q.namespace, q.name, q.api_group) for q in questions] == [
        ("impersonate", "serviceaccounts", "", "ns", "robot", ""),
        ("impersonate", "userextras", "scopes", "", "view", "authentication.k8s.io")]
    user = impersonation.impersonated(wanted)
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns")
    assert user.extra == (("scopes", ("view",)),)
    assert impersonation.impersonated(impersonation.parse([("Impersonate-User", "u"), ("Impersonate-Group", "g"),
                                                           ("Impersonate-Group", "h")])).groups == ("g", "h")


def test_impersonating_groups_without_a_user_is_refused():
    with pytest.raises(APIError) as caught:
        impersonation.parse([("Impersonate-Group", "g")])
    assert caught.value.code == 400


def test_edit_may_impersonate_service_accounts_only():
    edit_user = UserInfo("ed")
    policy = Policy([*POLICY.objects, role("edit-flat", [bootstrappolicy.rule("impersonate", "", "serviceaccounts")]),
                     binding("e", "ClusterRole", "edit-flat", [bootstrappolicy.user("ed")], namespace="ns")])
    chain = Chain([RBACAuthorizer(policy)], RBACAuthorizer(policy))
    sa = impersonation.checks(edit_user, impersonation.parse([("Impersonate-User", "system:serviceaccount:ns:x")]))[0]
    user = impersonation.checks(edit_user, impersonation.parse([("Impersonate-User", "root")]))[0]
    assert chain.authorize(sa).allowed and not chain.authorize(user).allowed
    assert forbidden(user).message == ('users "root" is forbidden: User "ed" cannot impersonate resource "users" in '
                                       'API group "" at the cluster scope')


# -- bootstrap reconcile ------------------------------------------------------------------------------


def test_reconcile_creates_adds_rules_and_subjects_never_removes():
    wanted = bootstrappolicy.cluster_role("r", [bootstrappolicy.rule("get", "", "pods", "services")])
    assert reconcile.reconcile_role(None, wanted).action is reconcile.Action.CREATE
    stored = bootstrappolicy.cluster_role("r", [bootstrappolicy.rule("get", "", "pods"),
                                               bootstrappolicy.rule("delete", "", "nodes")])
    stored["metadata"]["labels"]["mine"] = "yes"
    plan = reconcile.reconcile_role(stored, wanted)
    assert plan is not None and plan.action is reconcile.Action.UPDATE
    assert plan.obj["rules"] == [*stored["rules"], {"verbs": ["get"], "apiGroups": [""], "resources": ["services"]}]
    assert plan.obj["metadata"]["labels"]["mine"] == "yes"
    assert reconcile.reconcile_role(plan.obj, wanted) is None  # converged
    stored_binding = bootstrappolicy.cluster_role_binding("b", [bootstrappolicy.user("extra")])
    plan = reconcile.reconcile_binding(stored_binding,
                                       bootstrappolicy.cluster_role_binding("b", [bootstrappolicy.user("u")]))
    assert plan is not None and plan.obj["subjects"] == [bootstrappolicy.user("extra"), bootstrappolicy.user("u")]


def test_reconcile_skips_objects_not_auto_updated():
    stored = bootstrappolicy.cluster_role("r", [])
    stored["metadata"]["annotations"][bootstrappolicy.AUTOUPDATE] = "false"
    assert reconcile.reconcile_role(stored, bootstrappolicy.cluster_role("r", [bootstrappolicy.rule("*", "*", "*")])) \
        is None


def test_reconcile_recreates_a_binding_whose_role_changed():
    stored = bootstrappolicy.cluster_role_binding("b", [], role="old")
    plan = reconcile.reconcile_binding(stored, bootstrappolicy.cluster_role_binding("b", []))
    assert plan is not None and plan.action is reconcile.Action.RECREATE and plan.obj["roleRef"]["name"] == "b"


def test_bootstrap_policy_names():
    roles = {r["metadata"]["name"]: r for r in bootstrappolicy.all_cluster_roles()}
    for name in ("cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
                 "system:public-info-viewer", "system:node-proxier", "system:kube-scheduler",
                 "system:kube-controller-manager", "system:kube-dns", "system:controller:deployment-controller",
                 "system:controller:clusterrole-aggregation-controller"):
        assert roles[name]["metadata"]["annotations"] == {bootstrappolicy.AUTOUPDATE: "true"}
    assert roles["edit"]["metadata"]["labels"][f"{bootstrappolicy.AGGREGATE_TO}admin"] == "true"
    bindings = {b["metadata"]["name"] for b in bootstrappolicy.all_cluster_role_bindings()}
    assert "system:controller:deployment-controller" in bindings
