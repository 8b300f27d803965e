"""Admission webhooks without a network (control/apiserver/admission/webhook/): which webhooks a request
matches (rules, scope, subresources, matchPolicy, the two selectors, matchConditions), how an answer is read
(upstream's errors, JSONPatch), and the two plugins over a fake poster (order, reinvocation, failurePolicy,
dryRun, parallel validation with the first refusal in webhook order)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pytest

from control.apiserver.admission.chain import Attributes, Operation
from control.apiserver.admission.webhook import celexpr, client, matching, review
from control.apiserver.admission.webhook.dispatch import MutatingWebhooks, ValidatingWebhooks, hooks
from control.apiserver.admission.webhook.matching import GroupVersionResource as GVR
from control.apiserver.admission.webhook.matching import Request
from control.apiserver.resources import Resource, by_path
from control.apiserver.status import APIError

DEPLOYMENTS = GVR("apps", "v1", "deployments")
RULE = {"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}


def request(operation: str = "CREATE", gvr: GVR = DEPLOYMENTS, subresource: str = "", namespace: str = "ns",
            obj: dict | None = None, old: dict | None = None, namespace_labels: dict | None = None) -> Request:
    return Request(operation, gvr, subresource, namespace, obj, old, namespace_labels)


def labelled(**labels: str) -> dict:
    return {"metadata": {"name": "x", "labels": labels}}


@pytest.mark.parametrize(("rule", "req", "expected"), [
    pytest.param(RULE, request(), True, id="exact"),
    pytest.param(RULE, request("UPDATE"), False, id="other operation"),
    pytest.param({**RULE, "operations": ["*"]}, request("DELETE"), True, id="any operation"),
    pytest.param({**RULE, "apiGroups": [""]}, request(), False, id="other group"),
    pytest.param({**RULE, "apiVersions": ["*"], "apiGroups": ["*"]}, request(), True, id="any group and version"),
    pytest.param(RULE, request(subresource="scale"), False, id="a resource rule does not see subresources"),
    pytest.param({**RULE, "resources": ["deployments/scale"]}, request(subresource="scale"), True, id="named sub"),
    pytest.param({**RULE, "resources": ["deployments/*"]}, request(subresource="status"), True, id="res/*"),
    pytest.param({**RULE, "resources": ["deployments/*"]}, request(), True, id="res/* also the resource itself"),
    pytest.param({**RULE, "resources": ["*"]}, request(subresource="status"), False, id="* is no subresource"),
    pytest.param({**RULE, "resources": ["*/*"]}, request(subresource="status"), True, id="*/* is everything"),
    pytest.param({**RULE, "resources": ["*/scale"]}, request(subresource="scale"), True, id="*/scale"),
    pytest.param({**RULE, "scope": "Namespaced"}, request(), True, id="namespaced scope"),
    pytest.param({**RULE, "scope": "Cluster"}, request(), False, id="cluster scope, namespaced object"),
    pytest.param({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces"],
                  "scope": "Cluster"}, request(gvr=GVR("", "v1", "namespaces"), namespace="ns"), True,
                 id="a namespace is cluster-scoped"),
])
def test_rules(rule: dict, req: Request, expected: bool) -> None:
    assert matching.rule_matches(rule, req, req.gvr) is expected


def test_match_policy_equivalent_finds_another_served_version() -> None:
    hpa_v2, hpa_v1 = GVR("autoscaling", "v2", "horizontalpodautoscalers"), GVR("autoscaling", "v1",
                                                                                "horizontalpodautoscalers")
    webhook = {"rules": [{"operations": ["*"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"],
                          "resources": ["horizontalpodautoscalers"]}]}
    req = request(gvr=hpa_v2)
    assert matching.matched_resource(webhook, req, [hpa_v1]) == hpa_v1
    assert matching.matched_resource({**webhook, "matchPolicy": "Exact"}, req, [hpa_v1]) is None
    assert matching.matched_resource(webhook, req, []) is None


@pytest.mark.parametrize(("webhook", "req", "expected"), [
    pytest.param({}, request(namespace_labels={}), True, id="no selector"),
    pytest.param({"namespaceSelector": {"matchLabels": {"env": "prod"}}},
                 request(namespace_labels={"env": "prod"}), True, id="namespace labels match"),
    pytest.param({"namespaceSelector": {"matchLabels": {"env": "prod"}}},
                 request(namespace_labels={"env": "dev"}), False, id="namespace labels differ"),
    pytest.param({"namespaceSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}},
                 request(namespace_labels={"skip": ""}), False, id="expression"),
    pytest.param({"namespaceSelector": {"matchLabels": {"env": "prod"}}},
                 request(gvr=GVR("", "v1", "nodes"), namespace=""), True, id="cluster-scoped objects pass"),
    pytest.param({"namespaceSelector": {"matchLabels": {"env": "prod"}}},
                 request(gvr=GVR("", "v1", "namespaces"), namespace="", obj=labelled(env="prod")), True,
                 id="a namespace by its own labels"),
])
def test_namespace_selector(webhook: dict, req: Request, expected: bool) -> None:
    assert matching.namespace_selected(webhook, req) is expected


@pytest.mark.parametrize(("selector", "obj", "old", "expected"), [
    pytest.param(None, None, None, True, id="none"),
    pytest.param({"matchLabels": {"a": "1"}}, labelled(a="1"), None, True, id="new object matches"),
    pytest.param({"matchLabels": {"a": "1"}}, labelled(a="2"), labelled(a="1"), True, id="old object matches"),
    pytest.param({"matchLabels": {"a": "1"}}, labelled(a="2"), None, False, id="neither"),
    pytest.param({"matchLabels": {"a": "1"}}, None, None, False, id="no object has no labels"),
])
def test_object_selector(selector: dict | None, obj: dict | None, old: dict | None, expected: bool) -> None:
    assert matching.object_selected({"objectSelector": selector}, request(obj=obj, old=old)) is expected


def test_the_admission_configurations_are_exempt() -> None:
    assert matching.exempt(GVR("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"))
    assert not matching.exempt(DEPLOYMENTS)


@pytest.mark.parametrize(("expressions", "expected"), [
    pytest.param(["object.metadata.name == 'x'"], True, id="true"),
    pytest.param(["object.metadata.name == 'x'", "request.operation == 'DELETE'"], False, id="one false"),
    pytest.param(["object.nope.deeper == 1", "false"], False, id="false wins over an error"),
    pytest.param(["object.nope.deeper == 1"], celexpr.ExpressionError, id="error"),
    pytest.param(["'not a bool'"], celexpr.ExpressionError, id="not a bool"),
    pytest.param(["has(object.metadata.labels) && object.metadata.labels.a == '1'"], True, id="has"),
])
def test_match_conditions(expressions: list[str], expected: bool | type) -> None:
    names = celexpr.activation({"object": labelled(a="1"), "oldObject": None, "request": {"operation": "CREATE"}})
    conditions = [{"name": f"c{i}", "expression": e} for i, e in enumerate(expressions)]
    if isinstance(expected, bool):
        assert celexpr.match_conditions(conditions, names) is expected
    else:
        with pytest.raises(expected):
            celexpr.match_conditions(conditions, names)


def answer(uid: str = "u1", *, api_version: str = "admission.k8s.io/v1", **response: Any) -> bytes:
    return json.dumps({"apiVersion": api_version, "kind": "AdmissionReview",
                       "response": {"uid": uid, **response}}).encode()


def b64(patch: Any) -> str:
    return base64.b64encode(json.dumps(patch).encode()).decode()


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(b"nope", "failed to decode response"),
    pytest.param(answer(api_version="admission.k8s.io/v1beta1", allowed=True),
                 "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got "
                 "admission.k8s.io/v1beta1, Kind=AdmissionReview", id="version"),
    pytest.param(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
                 "webhook response was absent", id="no response"),
    pytest.param(answer("other", allowed=True), 'expected response.uid="u1", got "other"', id="uid"),
    pytest.param(answer(allowed=True, patch=b64([])), "webhook returned response.patch but not response.patchType",
                 id="patch without type"),
    pytest.param(answer(allowed=True, patch=b64([]), patchType="MergePatch"),
                 'webhook returned invalid response.patchType of "MergePatch"', id="patch type"),
])
def test_answers_upstream_refuses(body: bytes, message: str) -> None:
    with pytest.raises(review.CallError) as caught:
        review.read_response("w.example.com", body, uid="u1", api_version="admission.k8s.io/v1")
    assert str(caught.value).startswith(f'failed calling webhook "w.example.com": {message}')


def test_an_answer_read() -> None:
    patch = [{"op": "add", "path": "/metadata/labels", "value": {"a": "1"}}]
    verdict = review.read_response("w", answer(allowed=True, patch=b64(patch), patchType="JSONPatch",
                                               warnings=["careful"], auditAnnotations={"k": "v"}),
                                   uid="u1", api_version="admission.k8s.io/v1")
    assert verdict == review.Verdict(True, {}, patch, ("careful",), {"k": "v"})
    assert review.apply_patch({"metadata": {"name": "x"}}, patch) == {"metadata": {"name": "x", "labels": {"a": "1"}}}


@pytest.mark.parametrize(("status", "code", "message"), [
    pytest.param({"code": 403, "message": "no"}, 403, 'admission webhook "w" denied the request: no', id="message"),
    pytest.param({"code": 200, "reason": "Why"}, 400, 'admission webhook "w" denied the request: Why', id="reason"),
    pytest.param({}, 400, 'admission webhook "w" denied the request without explanation', id="nothing"),
])
def test_refusals(status: dict, code: int, message: str) -> None:
    error = review.denied("w", status)
    assert (error.code, error.message) == (code, message)


# --- the plugins over a fake poster ----------------------------------------------------------------

CONFIGMAPS = by_path("", "v1", "configmaps")
NAMESPACES = by_path("", "v1", "namespaces")
MUTATING = by_path("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations")
VALIDATING = by_path("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")


class Reader:
    def __init__(self, **configurations: list[dict]) -> None:
        self.configurations = configurations

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        return {"metadata": {"name": name, "labels": {}}} if resource is NAMESPACES else None

    def list_all(self, resource: Resource, namespace: str) -> list[dict[str, Any]]:
        return self.configurations.get(resource.plural, [])


Answer = Callable[[dict[str, Any]], dict[str, Any]]


class Poster(client.Poster):
    """Answers per URL path with a function of the AdmissionRequest; records the calls."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        super().__init__()
        self.answers = answers
        self.calls: list[str] = []

    def post(self, target: client.Target, body: bytes, *, timeout: float) -> bytes:
        path = target.path.split("?")[0]
        self.calls.append(path)
        request = json.loads(body)["request"]
        if path not in self.answers:
            raise RuntimeError(f'Post "{target.url}": connect: connection refused')
        return answer(request["uid"], **self.answers[path](request))


def webhook(name: str, path: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "clientConfig": {"url": f"https://hooks.example.com{path}"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], **extra}


def configuration(name: str, *webhooks: dict) -> dict:
    return {"metadata": {"name": name}, "webhooks": list(webhooks)}


def add_label(key: str) -> Answer:
    def answer_(request: dict[str, Any]) -> dict[str, Any]:
        labels = request["object"]["metadata"].get("labels") or {}
        seen = "_".join(sorted(labels))
        return {"allowed": True, "patchType": "JSONPatch",
                "patch": b64([{"op": "add", "path": "/metadata/labels", "value": {**labels, key: seen or "none"}}])}
    return answer_


def attributes(*, dry_run: bool = False) -> Attributes:
    assert CONFIGMAPS is not None
    return Attributes(Operation.CREATE, CONFIGMAPS, "ns", "cm", {"metadata": {"name": "cm", "namespace": "ns"}},
                      dry_run=dry_run)


def test_configurations_in_name_order_webhooks_in_theirs() -> None:
    found = hooks([configuration("b", webhook("b1", "/"), webhook("b2", "/")), configuration("a", webhook("a1", "/"))])
    assert [(h.name, h.index) for h in found] == [("a1", 0), ("b1", 1), ("b2", 2)]


def test_mutating_in_order_with_reinvocation() -> None:
    poster = Poster({"/first": add_label("first"), "/second": add_label("second")})
    reader = Reader(mutatingwebhookconfigurations=[
        configuration("2", webhook("second.example.com", "/second")),
        configuration("1", webhook("first.example.com", "/first", reinvocationPolicy="IfNeeded"))])
    attrs = attributes()
    MutatingWebhooks(reader, endpoint_routing=True, poster=poster).admit(attrs)
    assert poster.calls == ["/first", "/second", "/first"]
    assert attrs.obj is not None
    assert attrs.obj["metadata"]["labels"] == {"first": "first_second", "second": "first"}
    assert "patch.webhook.admission.k8s.io/round_1_index_0" in attrs.annotations


def test_never_reinvoked_without_if_needed() -> None:
    poster = Poster({"/first": add_label("first"), "/second": add_label("second")})
    reader = Reader(mutatingwebhookconfigurations=[configuration("1", webhook("first.example.com", "/first")),
                                                   configuration("2", webhook("second.example.com", "/second"))])
    MutatingWebhooks(reader, endpoint_routing=True, poster=poster).admit(attributes())
    assert poster.calls == ["/first", "/second"]


@pytest.mark.parametrize(("policy", "refused"), [pytest.param("Ignore", False, id="Ignore"),
                                                 pytest.param("Fail", True, id="Fail"),
                                                 pytest.param(None, True, id="default Fail")])
def test_failure_policy(policy: str | None, refused: bool) -> None:
    extra = {"failurePolicy": policy} if policy else {}
    reader = Reader(validatingwebhookconfigurations=[configuration("1", webhook("gone.example.com", "/gone", **extra))])
    plugin = ValidatingWebhooks(reader, endpoint_routing=True, poster=Poster({}))
    attrs = attributes()
    if not refused:
        plugin.validate(attrs, ExitStack())
        assert attrs.annotations == {"failed-open.validating.webhook.admission.k8s.io/round_0_index_0":
                                     "gone.example.com"}
        return
    with pytest.raises(APIError) as caught:
        plugin.validate(attrs, ExitStack())
    assert (caught.value.code, caught.value.message) == (500, (
        'Internal error occurred: failed calling webhook "gone.example.com": failed to call webhook: Post '
        '"https://hooks.example.com/gone?timeout=10s": connect: connection refused'))


def test_validating_all_called_first_refusal_in_webhook_order() -> None:
    poster = Poster({"/yes": lambda r: {"allowed": True},
                     "/no1": lambda r: {"allowed": False, "status": {"message": "one"}},
                     "/no2": lambda r: {"allowed": False, "status": {"message": "two"}}})
    reader = Reader(validatingwebhookconfigurations=[
        configuration("1", webhook("yes.example.com", "/yes"), webhook("no1.example.com", "/no1")),
        configuration("2", webhook("no2.example.com", "/no2"))])
    with pytest.raises(APIError) as caught:
        ValidatingWebhooks(reader, endpoint_routing=True, poster=poster).validate(attributes(), ExitStack())
    assert caught.value.message == 'admission webhook "no1.example.com" denied the request: one'
    assert sorted(poster.calls) == ["/no1", "/no2", "/yes"]


def test_dry_run_needs_a_webhook_without_side_effects() -> None:
    poster = Poster({"/yes": lambda r: {"allowed": True}})
    unsafe = webhook("unsafe.example.com", "/yes", sideEffects="Some")
    safe = webhook("safe.example.com", "/yes", sideEffects="NoneOnDryRun")
    reader = Reader(validatingwebhookconfigurations=[configuration("1", safe)])
    ValidatingWebhooks(reader, endpoint_routing=True, poster=poster).validate(attributes(dry_run=True), ExitStack())
    reader = Reader(validatingwebhookconfigurations=[configuration("1", unsafe)])
    with pytest.raises(APIError) as caught:
        ValidatingWebhooks(reader, endpoint_routing=True, poster=poster).validate(attributes(dry_run=True),
                                                                                 ExitStack())
    assert (caught.value.code, caught.value.message) == (400, 'admission webhook "unsafe.example.com" does not '
                                                              'support dry run')


SERVICES = by_path("", "v1", "services")


class ServiceReader:
    def __init__(self, service: dict | None, endpoints: dict | None) -> None:
        self.service, self.endpoints = service, endpoints

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        return self.service if resource is SERVICES else self.endpoints


SERVICE = {"spec": {"clusterIP": "10.96.0.20", "ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}
ENDPOINTS = {"subsets": [{"addresses": [{"ip": "10.244.0.7"}], "ports": [{"name": "https", "port": 8443}]}]}
CONFIG = {"service": {"namespace": "hooks", "name": "svc", "path": "/validate"}}


@pytest.mark.parametrize(("reader", "routing", "address"), [
    pytest.param(ServiceReader(SERVICE, ENDPOINTS), False, ("10.96.0.20", 443), id="ClusterIP"),
    pytest.param(ServiceReader(SERVICE, ENDPOINTS), True, ("10.244.0.7", 8443), id="endpoints"),
    pytest.param(ServiceReader(SERVICE, None), True, 'no endpoints available for service "svc"', id="no endpoints"),
    pytest.param(ServiceReader(None, None), False, 'service "svc" not found', id="no service"),
])
def test_service_resolution(reader: ServiceReader, routing: bool, address: tuple | str) -> None:
    if isinstance(address, str):
        with pytest.raises(client.ResolveError, match=address):
            client.resolve(CONFIG, reader, endpoint_routing=routing, timeout=10)
        return
    target = client.resolve(CONFIG, reader, endpoint_routing=routing, timeout=10)
    assert (target.host, target.port) == address
    assert (target.server_name, target.path) == ("svc.hooks.svc", "/validate?timeout=10s")
    assert target.url == "https://svc.hooks.svc:443/validate?timeout=10s"
