"""End-to-end: RBAC through the real kubectl binaries (1.33 and Debian's 1.20) against a real API server —
`kubectl auth can-i` (one question and `--list`) for the admin and for users acted as with `--as` /
`--as-group`, upstream's 403 text on a refused `get`, roles and bindings made with `kubectl create role /
rolebinding`, and `kubectl auth whoami` (1.28+ only)."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.e2e.conftest import Kubectl


@pytest.fixture
def ns(kubectl: Kubectl) -> str:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    kubectl.run("create", "namespace", name)
    return name


def can_i(kubectl: Kubectl, *args: str) -> tuple[str, int]:
    result = kubectl.run("auth", "can-i", *args, check=False)
    return result.stdout.strip(), result.returncode


def test_can_i_and_as(kubectl: Kubectl, ns: str) -> None:
    assert can_i(kubectl, "delete", "nodes") == ("yes", 0)
    assert can_i(kubectl, "list", "pods", "-n", ns, "--as", "alice") == ("no", 1)
    kubectl.run("create", "role", "pod-reader", "-n", ns, "--verb=get,list,watch", "--resource=pods,pods/log")
    kubectl.run("create", "rolebinding", "devs-read", "-n", ns, "--role=pod-reader", "--group=devs")
    assert can_i(kubectl, "list", "pods", "-n", ns, "--as", "alice") == ("no", 1)
    assert can_i(kubectl, "list", "pods", "-n", ns, "--as", "alice", "--as-group", "devs") == ("yes", 0)
    assert can_i(kubectl, "get", "pods", "--subresource=log", "-n", ns, "--as", "alice", "--as-group", "devs") == (
        "yes", 0)
    assert can_i(kubectl, "list", "secrets", "-n", ns, "--as", "alice", "--as-group", "devs") == ("no", 1)
    refused = kubectl.run("get", "pods", "-n", "default", "--as", "alice", "--as-group", "devs", check=False)
    assert refused.returncode != 0
    assert ('Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API '
            'group "" in the namespace "default"') in refused.stderr
    assert kubectl.run("get", "pods", "-n", ns, "--as", "alice", "--as-group", "devs").returncode == 0


def test_can_i_list(kubectl: Kubectl, ns: str) -> None:
    kubectl.run("create", "role", "cm-editor", "-n", ns, "--verb=get,update", "--resource=configmaps",
                "--resource-name=settings")
    kubectl.run("create", "rolebinding", "bob-cm", "-n", ns, "--role=cm-editor", "--user=bob")
    listed = kubectl.run("auth", "can-i", "--list", "-n", ns, "--as", "bob").stdout
    rows = {line.split()[0]: line.split()[1:] for line in listed.splitlines()[1:] if line.strip()}
    assert rows["configmaps"] == ["[]", "[settings]", "[get", "update]"]
    assert "selfsubjectaccessreviews.authorization.k8s.io" in rows
    admin = kubectl.run("auth", "can-i", "--list", "-n", ns).stdout
    assert any(line.split()[:1] == ["*.*"] for line in admin.splitlines())


def test_whoami(kubectl: Kubectl) -> None:
    if "1.20" in kubectl.binary:
        pytest.skip("kubectl 1.20 has no `auth whoami` (added in 1.26, SelfSubjectReview v1 in 1.28)")
    me = json.loads(kubectl.run("auth", "whoami", "-o", "json").stdout)
    assert me["status"]["userInfo"]["username"] == "system:admin"
    assert me["status"]["userInfo"]["groups"] == ["system:masters", "system:authenticated"]
    table = kubectl.run("auth", "whoami", "--as", "alice", "--as-group", "devs").stdout
    assert table.split() == ["ATTRIBUTE", "VALUE", "Username", "alice", "Groups", "[devs", "system:authenticated]"]
