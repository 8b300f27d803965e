"""RBAC rule matching and rule covering (cases of upstream plugin/pkg/auth/authorizer/rbac/rbac_test.go and
staging/src/k8s.io/component-helpers/auth/rbac/validation/policy_comparator_test.go)."""

from __future__ import annotations

import pytest

from control.apiserver.authentication.tokens import UserInfo
from control.apiserver.authorization.attributes import Attributes
from control.apiserver.authorization.rules import Rule, compact, rule_allows, uncovered

ALICE = UserInfo("alice")


def resource(verb: str, group: str, res: str, sub: str = "", name: str = "", namespace: str = "ns") -> Attributes:
    return Attributes(user=ALICE, verb=verb, resource_request=True, namespace=namespace, api_group=group,
                      resource=res, subresource=sub, name=name)


def url(verb: str, path: str) -> Attributes:
    return Attributes(user=ALICE, verb=verb, path=path)


def rule(verbs=(), groups=(), resources=(), names=(), urls=()) -> Rule:
    return Rule(verbs=tuple(verbs), api_groups=tuple(groups), resources=tuple(resources),
                resource_names=tuple(names), non_resource_urls=tuple(urls))


@pytest.mark.parametrize(("the_rule", "request_", "allowed"), [
    pytest.param(rule(["*"], ["*"], ["*"]), resource("get", "apps", "deployments"), True, id="star-everything"),
    pytest.param(rule(["get"], [""], ["pods"]), resource("get", "", "pods"), True, id="exact"),
    pytest.param(rule(["get"], [""], ["pods"]), resource("list", "", "pods"), False, id="other-verb"),
    pytest.param(rule(["get"], [""], ["pods"]), resource("get", "apps", "pods"), False, id="other-group"),
    pytest.param(rule(["get"], [""], ["pods"]), resource("get", "", "pods", "log"), False,
                 id="resource-does-not-cover-subresource"),
    pytest.param(rule(["get"], [""], ["pods/log"]), resource("get", "", "pods", "log"), True, id="subresource"),
    pytest.param(rule(["get"], [""], ["pods/log"]), resource("get", "", "pods"), False,
                 id="subresource-does-not-cover-resource"),
    pytest.param(rule(["get"], ["*"], ["*/scale"]), resource("get", "apps", "deployments", "scale"), True,
                 id="star-slash-subresource"),
    pytest.param(rule(["get"], ["*"], ["*/scale"]), resource("get", "apps", "deployments"), False,
                 id="star-slash-subresource-not-parent"),
    pytest.param(rule(["get"], ["*"], ["*/scale"]), resource("get", "apps", "deployments", "status"), False,
                 id="star-slash-other-subresource"),
    pytest.param(rule(["get"], [""], ["secrets"], ["a"]), resource("get", "", "secrets", name="a"), True,
                 id="resource-name"),
    pytest.param(rule(["get"], [""], ["secrets"], ["a"]), resource("get", "", "secrets", name="b"), False,
                 id="other-resource-name"),
    pytest.param(rule(["list"], [""], ["secrets"], ["a"]), resource("list", "", "secrets"), False,
                 id="resource-names-never-match-unnamed-list"),
    pytest.param(rule(["get"], urls=["*"]), url("get", "/anything"), True, id="url-star"),
    pytest.param(rule(["get"], urls=["/healthz"]), url("get", "/healthz"), True, id="url-exact"),
    pytest.param(rule(["get"], urls=["/healthz"]), url("post", "/healthz"), False, id="url-other-verb"),
    pytest.param(rule(["get"], urls=["/foo/*"]), url("get", "/foo/bar"), True, id="url-trailing-star"),
    pytest.param(rule(["get"], urls=["/foo/*"]), url("get", "/foo"), False, id="url-trailing-star-needs-slash"),
    pytest.param(rule(["get"], urls=["/foo*"]), url("get", "/foobar"), True, id="url-star-prefix"),
    pytest.param(rule(["get"], urls=["/api"]), resource("get", "", "pods"), False, id="url-rule-never-a-resource"),
    pytest.param(rule(["get"], ["*"], ["*"]), url("get", "/api"), False, id="resource-rule-never-a-url"),
])
def test_rule_allows(the_rule, request_, allowed):
    assert rule_allows(request_, the_rule) is allowed


@pytest.mark.parametrize(("owner", "wanted", "covered"), [
    pytest.param([rule(["*"], [""], ["pods"])], [rule(["get"], [""], ["pods"])], True, id="star-verb"),
    pytest.param([rule(["get"], ["*"], ["pods"])], [rule(["get"], ["apps", ""], ["pods"])], True, id="star-group"),
    pytest.param([rule(["get"], [""], ["*"])], [rule(["get"], [""], ["pods", "pods/log"])], True,
                 id="star-resource"),
    pytest.param([rule(["get"], [""], ["pods"])], [rule(["get", "list"], [""], ["pods"])], False,
                 id="missing-verb"),
    pytest.param([rule(["get"], [""], ["secrets"], ["a"])], [rule(["get"], [""], ["secrets"])], False,
                 id="named-does-not-cover-unnamed"),
    pytest.param([rule(["get"], [""], ["secrets"])], [rule(["get"], [""], ["secrets"], ["a"])], True,
                 id="unnamed-covers-named"),
    pytest.param([rule(["get"], [""], ["secrets"], ["a", "b"])], [rule(["get"], [""], ["secrets"], ["a"])], True,
                 id="names-superset"),
    pytest.param([rule(["get"], ["apps"], ["*/scale"])], [rule(["get"], ["apps"], ["deployments/scale"])], True,
                 id="star-slash-subresource"),
    pytest.param([rule(["get"], ["apps"], ["*/scale"])], [rule(["get"], ["apps"], ["deployments"])], False,
                 id="star-slash-subresource-not-parent"),
    pytest.param([rule(["get"], urls=["/foo/*"])], [rule(["get"], urls=["/foo/bar", "/foo/baz"])], True,
                 id="url-prefix"),
    pytest.param([rule(["get"], urls=["/foo/*"])], [rule(["get"], urls=["/bar"])], False, id="url-elsewhere"),
    pytest.param([rule(["get"], [""], ["pods"]), rule(["list"], [""], ["pods"])],
                 [rule(["get", "list"], [""], ["pods"])], True, id="pieces-from-two-rules"),
])
def test_uncovered(owner, wanted, covered):
    assert (not uncovered(owner, wanted)) is covered


def test_compact_string_and_merging():
    missing = uncovered([], [rule(["get", "list"], [""], ["secrets"]), rule(["get"], urls=["/x"])])
    assert [r.compact() for r in compact(missing)] == [
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}', '{NonResourceURLs:["/x"], Verbs:["get"]}']
