"""The audit policy's rule matching (upstream pkg/audit/policy/checker_test.go's cases, reworded), loading
and validation, and the log backend's lumberjack-shaped rotation."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

from control.apiserver.audit import backend, policy
from control.apiserver.audit.policy import Level
from control.apiserver.authentication.tokens import UserInfo
from control.apiserver.authorization.attributes import request_attributes

TIM = UserInfo("tim", groups=("humans",))
SA = UserInfo("system:serviceaccount:kube-system:ns-controller", groups=("system:serviceaccounts",))


def attrs(user: UserInfo, method: str, path: str, **query: str):
    return request_attributes(user, method, path, query)


RULES = {
    "default": {"level": "Metadata"},
    "tim": {"level": "Request", "users": ["tim"]},
    "humans": {"level": "Request", "userGroups": ["humans"]},
    "authenticated": {"level": "Request", "userGroups": ["system:authenticated"]},
    "getpods": {"level": "RequestResponse", "verbs": ["get"], "resources": [{"resources": ["pods"]}]},
    "getPodLogs": {"level": "Request", "resources": [{"resources": ["pods/log"]}]},
    "anyStatus": {"level": "Request", "resources": [{"resources": ["*/status"]}]},
    "podsAll": {"level": "Request", "resources": [{"resources": ["pods/*"]}]},
    "getClusterRoles": {"level": "Request", "verbs": ["get"],
                        "resources": [{"group": "rbac.authorization.k8s.io", "resources": ["clusterroles"]}]},
    "getLogs": {"level": "Request", "verbs": ["get"], "nonResourceURLs": ["/logs*"]},
    "getMetrics": {"level": "Request", "verbs": ["get"], "nonResourceURLs": ["/metrics"]},
    "clusterRoleEdit": {"level": "Request",
                        "resources": [{"group": "rbac.authorization.k8s.io", "resources": ["clusterroles"],
                                       "resourceNames": ["edit"]}]},
    "kubeSystem": {"level": "Request", "namespaces": ["kube-system"]},
    "clusterScoped": {"level": "Request", "namespaces": [""]},
    "coreGroup": {"level": "Request", "resources": [{"group": ""}]},
}

READ_POD = attrs(TIM, "GET", "/api/v1/namespaces/default/pods/busybox")
POD_LOGS = attrs(TIM, "GET", "/api/v1/namespaces/default/pods/busybox/log")
POD_STATUS = attrs(SA, "PUT", "/api/v1/namespaces/default/pods/busybox/status")
DEPLOY_STATUS = attrs(SA, "PUT", "/apis/apps/v1/namespaces/default/deployments/web/status")
LIST_SYSTEM_SECRETS = attrs(SA, "GET", "/api/v1/namespaces/kube-system/secrets")
GET_EDIT = attrs(TIM, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/edit")
GET_VIEW = attrs(TIM, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/view")
GET_NODE = attrs(SA, "GET", "/api/v1/nodes/node-1")
LOGS = attrs(SA, "GET", "/logs/kubelet.log")
METRICS = attrs(SA, "GET", "/metrics")
WATCH_DEPLOYS = attrs(SA, "GET", "/apis/apps/v1/deployments", watch="true")


@pytest.mark.parametrize(("rule", "request_", "matches"), [
    ("default", READ_POD, True), ("default", METRICS, True),
    ("tim", READ_POD, True), ("tim", POD_STATUS, False),
    ("humans", READ_POD, True), ("humans", POD_STATUS, False),
    ("authenticated", POD_STATUS, True),
    ("getpods", READ_POD, True), ("getpods", POD_LOGS, False), ("getpods", POD_STATUS, False),
    ("getpods", METRICS, False),
    ("getPodLogs", POD_LOGS, True), ("getPodLogs", READ_POD, False),
    ("anyStatus", POD_STATUS, True), ("anyStatus", DEPLOY_STATUS, False),  # group "" only
    ("podsAll", POD_LOGS, True), ("podsAll", POD_STATUS, True), ("podsAll", READ_POD, True),
    ("podsAll", GET_NODE, False),
    ("getClusterRoles", GET_EDIT, True), ("getClusterRoles", READ_POD, False),
    ("getLogs", LOGS, True), ("getLogs", METRICS, False), ("getLogs", READ_POD, False),
    ("getMetrics", METRICS, True), ("getMetrics", LOGS, False),
    ("clusterRoleEdit", GET_EDIT, True), ("clusterRoleEdit", GET_VIEW, False),
    ("kubeSystem", LIST_SYSTEM_SECRETS, True), ("kubeSystem", READ_POD, False), ("kubeSystem", METRICS, False),
    ("clusterScoped", GET_NODE, True), ("clusterScoped", READ_POD, False), ("clusterScoped", METRICS, False),
    ("coreGroup", READ_POD, True), ("coreGroup", WATCH_DEPLOYS, False),
])
def test_rule_matching(rule: str, request_, matches: bool) -> None:
    parsed = policy.parse({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [RULES[rule]]})
    assert policy.rule_matches(parsed.rules[0], request_) is matches


def test_the_first_matching_rule_wins_and_stages_add_up() -> None:
    parsed = policy.parse({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                           "omitManagedFields": True, "rules": [
                               {"level": "None", "users": ["system:kube-proxy"]},
                               {"level": "RequestResponse", "resources": [{"resources": ["pods"]}],
                                "omitStages": ["ResponseStarted"], "omitManagedFields": False},
                               {"level": "Metadata"}]})
    pods = parsed.evaluate(READ_POD)
    assert pods.level is Level.REQUEST_RESPONSE
    assert pods.omit_stages == {"RequestReceived", "ResponseStarted"} and pods.omit_managed_fields is False
    other = parsed.evaluate(METRICS)
    assert other.level is Level.METADATA and other.omit_stages == {"RequestReceived"} and other.omit_managed_fields
    proxy = parsed.evaluate(attrs(UserInfo("system:kube-proxy"), "GET", "/api/v1/services"))
    assert proxy.level is Level.NONE


def test_no_match_is_level_none() -> None:
    parsed = policy.parse({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [RULES["tim"]]})
    assert parsed.evaluate(POD_STATUS).level is Level.NONE


@pytest.mark.parametrize(("document", "message"), [
    ({"apiVersion": "audit.k8s.io/v1beta2", "kind": "Policy", "rules": [{"level": "None"}]}, "expected apiVersion"),
    ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": []}, "0 rules"),
    ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Everything"}]}, "Unsupported value"),
    ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "None", "omitStages": ["Done"]}]},
     "Unsupported value"),
    ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
      "rules": [{"level": "None", "nonResourceURLs": ["/x"], "namespaces": ["a"]}]}, "both regular resources"),
    ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
      "rules": [{"level": "None", "resources": [{"resources": ["*"], "resourceNames": ["a"]}]}]}, "wildcard"),
])
def test_bad_policies_are_refused(document: dict, message: str) -> None:
    with pytest.raises(policy.PolicyError, match=message):
        policy.parse(document)


def test_rotation_renames_before_overflow_and_prunes_backups(tmp_path) -> None:
    now = [datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)]
    path = str(tmp_path / "audit.log")
    log = backend.RotatingFile(backend.LogOptions(path, max_backups=2, max_size_mb=1), clock=lambda: now[0])
    line = b"x" * (400 * 1024) + b"\n"
    for _ in range(3):
        log.write(line)
        now[0] += timedelta(seconds=1)
    log.flush()
    assert sorted(os.listdir(tmp_path)) == ["audit-2026-01-02T03-04-07.678.log", "audit.log"]
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    for _ in range(6):
        log.write(line)
        now[0] += timedelta(seconds=1)
    log.close()
    backups = sorted(name for name in os.listdir(tmp_path) if name != "audit.log")
    assert len(backups) == 2 and backups[-1] == "audit-2026-01-02T03-04-13.678.log"


def test_expired_backups_by_count_and_age() -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    names = ["/l/audit-2026-02-28T00-00-00.000.log", "/l/audit-2026-02-01T00-00-00.000.log",
             "/l/audit-2026-02-27T00-00-00.000.log", "/l/audit.log", "/l/other-2026-01-01T00-00-00.000.log"]
    assert backend.expired_backups("/l/audit.log", names, max_backups=0, max_age_days=7, now=now) == \
        ["/l/audit-2026-02-01T00-00-00.000.log"]
    assert backend.expired_backups("/l/audit.log", names, max_backups=1, max_age_days=0, now=now) == \
        ["/l/audit-2026-02-27T00-00-00.000.log", "/l/audit-2026-02-01T00-00-00.000.log"]
