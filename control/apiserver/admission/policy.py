"""ValidatingAdmissionPolicy: CEL validations bound to requests by ValidatingAdmissionPolicyBindings.

Upstream: k8s.io/apiserver/pkg/admission/plugin/policy/validating (plugin.go, dispatcher.go, validator.go) and
policy/matching (matchConstraints: resourceRules with resourceNames, excludeResourceRules, the selectors,
matchPolicy). Per binding whose policy exists and whose policy's matchConstraints and own matchResources
match the request: the policy's matchConditions, its params (`paramKind` + the binding's `paramRef`: one by
name or every one a selector picks, in the paramRef's namespace or the request's; none found under
`parameterNotFoundAction: Deny` is a refusal), its `variables`, then every validation against each param.
A false validation fails with its `messageExpression`'s string, else its `message`, else `failed expression:
<expression>`; an expression that errors fails under `failurePolicy: Fail` (the default) and is skipped under
`Ignore`. The binding's `validationActions` say what a failure does: Deny refuses the request with upstream's
`<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied
request: <message>` and the validation's `reason` (Invalid, 422, by default); Warn sends it as a warning;
Audit keeps it as the `validation.policy.admission.k8s.io/validation_failure` annotation. A policy's
`auditAnnotations` are kept as `<policy>/<key>`.

Departures: the CEL departures of webhook/celexpr.py; no type checking of the expressions against the
schemas (`status.typeChecking` is not written); policies and bindings are read from the store per write.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from control.apimachinery.labels import SelectorError, selector_from_label_selector
from control.apiserver import warning
from control.apiserver.admission.chain import Attributes, Operation, Reader
from control.apiserver.admission.webhook import celexpr, matching, review
from control.apiserver.admission.webhook.dispatch import NAMESPACES, Served, kind_of
from control.apiserver.admission.webhook.matching import GroupVersionResource
from control.apiserver.authentication import tokens as authn
from control.apiserver.resources import by_path
from control.apiserver.status import APIError

POLICIES = by_path("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")
BINDINGS = by_path("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings")
AUDIT_KEY = "validation.policy.admission.k8s.io/validation_failure"
_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed validation (or a failure the failurePolicy turned into one)."""

    message: str
    reason: str = "Invalid"
    expression_index: int = -1


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def constraints_match(match: Mapping[str, Any] | None, request: matching.Request, name: str,
                      equivalents: Iterable[GroupVersionResource], *, rules_required: bool) -> bool:
    """A policy's matchConstraints or a binding's matchResources (None: no constraint) against the request."""
    if match is None:
        return True
    rules = [r for r in match.get("resourceRules") or [] if not r.get("resourceNames") or name in r["resourceNames"]]
    if rules or rules_required or match.get("resourceRules"):
        as_webhook = {"rules": rules, "matchPolicy": match.get("matchPolicy")}
        if matching.matched_resource(as_webhook, request, list(equivalents)) is None:
            return False
    for rule in match.get("excludeResourceRules") or []:
        if (not rule.get("resourceNames") or name in rule["resourceNames"]) and \
                matching.rule_matches(rule, request, request.gvr):
            return False
    return matching.namespace_selected(match, request) and matching.object_selected(match, request)


def evaluate(policy: Mapping[str, Any], names: dict[str, Any]) -> list[Failure]:
    """Every failed validation of one policy over one activation (`params` included); an expression that
    errors is a Failure under failurePolicy Fail and nothing under Ignore."""
    spec = policy.get("spec") or {}
    fail_closed = spec.get("failurePolicy") != "Ignore"
    variables: dict[str, Any] = {}
    for variable in spec.get("variables") or []:
        try:
            variables[str(variable.get("name"))] = celexpr.evaluate(
                str(variable.get("expression", "")), {**names, "variables": celexpr.cel_map(variables)})
        except celexpr.ExpressionError:
            continue  # an expression that uses it fails
    scope = {**names, "variables": celexpr.cel_map(variables)}
    failures: list[Failure] = []
    for index, validation in enumerate(spec.get("validations") or []):
        expression = str(validation.get("expression", ""))
        try:
            value = celexpr.evaluate(expression, scope)
            if not celexpr.is_bool(value):
                raise celexpr.ExpressionError("must evaluate to bool")
        except celexpr.ExpressionError as exc:
            if fail_closed:
                failures.append(Failure(f"expression '{expression}' resulted in error: {exc}", "Invalid", index))
            continue
        if celexpr.is_true(value):
            continue
        failures.append(Failure(_message(validation, expression, scope), str(validation.get("reason") or "Invalid"),
                                index))
    return failures


def _message(validation: Mapping[str, Any], expression: str, scope: Mapping[str, Any]) -> str:
    if isinstance(validation.get("messageExpression"), str):
        try:
            produced = celexpr.evaluate(validation["messageExpression"], scope)
            if isinstance(produced, str) and produced.strip() and "\n" not in produced:
                return str(produced)
        except celexpr.ExpressionError:
            pass  # upstream falls back to the message
    message = validation.get("message")
    return message if isinstance(message, str) and message else f"failed expression: {expression}"


def audit_annotations(policy: Mapping[str, Any], names: Mapping[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for annotation in (policy.get("spec") or {}).get("auditAnnotations") or []:
        try:
            value = celexpr.evaluate(str(annotation.get("valueExpression", "")),
                                     {**names, "variables": celexpr.cel_map({})})
        except celexpr.ExpressionError:
            continue
        if isinstance(value, str) and value:
            found[f"{_name(policy)}/{annotation.get('key', '')}"] = str(value)
    return found


def refusal(attributes: Attributes, policy: str, binding: str, failure: Failure) -> APIError:
    """upstream: admission.NewForbidden's message, the validation's reason and its code."""
    resource = attributes.resource
    qualified = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
    message = f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {failure.message}"
    details: dict[str, Any] = {"name": attributes.name, "kind": resource.plural}
    if resource.group:
        details["group"] = resource.group
    details["causes"] = [{"message": message}]
    return APIError(_CODES.get(failure.reason, 422), failure.reason,
                    f'{qualified} "{attributes.name}" is forbidden: {message}', details=details)


class ValidatingAdmissionPolicies:
    """The ValidatingAdmissionPolicy plugin, between the in-process validators and the validating webhooks."""

    name = "ValidatingAdmissionPolicy"

    def __init__(self, reader: Reader, *, served: Served | None = None) -> None:
        self._reader = reader
        self._served = served or (lambda: ())

    def validate(self, attributes: Attributes, hold: ExitStack) -> None:
        resource = attributes.resource
        if matching.exempt(GroupVersionResource(resource.group, "", resource.plural)):
            return
        assert POLICIES is not None and BINDINGS is not None
        bindings = self._reader.list_all(BINDINGS, "")
        if not bindings:
            return
        policies = {_name(p): p for p in self._reader.list_all(POLICIES, "")}
        old = attributes.old
        if old is None and attributes.operation is Operation.DELETE:
            old = self._reader.get(resource, attributes.namespace, attributes.name)
        namespace_obj = None
        if attributes.namespace and resource.namespaced:
            assert NAMESPACES is not None
            namespace_obj = self._reader.get(NAMESPACES, "", attributes.namespace)
        gvr = GroupVersionResource(resource.group, resource.version, resource.plural)
        request = matching.Request(attributes.operation.value, gvr, attributes.subresource,
                                   attributes.namespace if resource.namespaced else "", attributes.obj, old,
                                   ((namespace_obj or {}).get("metadata") or {}).get("labels") or {})
        equivalents = [GroupVersionResource(r.group, r.version, r.plural) for r in self._served()
                       if r.group == gvr.group and r.plural == gvr.resource and r.version != gvr.version]
        for binding in sorted(bindings, key=_name):
            spec = binding.get("spec") or {}
            policy = policies.get(str(spec.get("policyName", "")))
            if policy is None:
                continue
            policy_spec = policy.get("spec") or {}
            if not constraints_match(policy_spec.get("matchConstraints"), request, attributes.name, equivalents,
                                     rules_required=True) or \
                    not constraints_match(spec.get("matchResources"), request, attributes.name, equivalents,
                                          rules_required=False):
                continue
            self._apply(attributes, policy, binding, request, namespace_obj)

    def _apply(self, attributes: Attributes, policy: Mapping[str, Any], binding: Mapping[str, Any],
               request: matching.Request, namespace_obj: Mapping[str, Any] | None) -> None:
        names = self._activation(attributes, request, namespace_obj)
        policy_spec, spec = policy.get("spec") or {}, binding.get("spec") or {}
        fail_closed = policy_spec.get("failurePolicy") != "Ignore"
        failures: list[Failure] = []
        try:
            if policy_spec.get("matchConditions") and not celexpr.match_conditions(
                    policy_spec["matchConditions"], celexpr.activation({**names, "params": None})):
                return
            params = self._params(policy_spec.get("paramKind"), spec.get("paramRef"), attributes)
        except _NoParams as exc:
            failures.append(Failure(str(exc)))
            params = []
        except (celexpr.ExpressionError, LookupError) as exc:
            if fail_closed:
                failures.append(Failure(str(exc)))
            params = []
        for param in params:
            failures.extend(evaluate(policy, celexpr.activation({**names, "params": param})))
        if params:
            attributes.annotations.update(audit_annotations(policy, celexpr.activation({**names, "params": params[0]})))
        actions = spec.get("validationActions") or []
        for failure in failures:
            self._act(attributes, actions, _name(policy), _name(binding), failure)

    def _activation(self, attributes: Attributes, request: matching.Request,
                    namespace_obj: Mapping[str, Any] | None) -> dict[str, Any]:
        user = authn.current_user.get()
        subject = review.Subject(
            kind=kind_of(attributes.resource, attributes.subresource, request.gvr), resource=request.gvr,
            request_kind=kind_of(attributes.resource, attributes.subresource, request.gvr),
            request_resource=request.gvr, subresource=attributes.subresource, name=attributes.name,
            namespace=attributes.namespace, operation=attributes.operation.value,
            user=user.to_json() if user is not None else {}, obj=request.obj, old=request.old,
            dry_run=attributes.dry_run)
        return {"object": request.obj, "oldObject": request.old, "namespaceObject": namespace_obj,
                "request": review.admission_request("", subject)}

    def _params(self, kind: Mapping[str, Any] | None, ref: Mapping[str, Any] | None,
                attributes: Attributes) -> list[Any]:
        """The params to evaluate with: [None] without a paramKind; LookupError when they cannot be found
        (a failure) — except none found under parameterNotFoundAction Deny, which is a refusal."""
        if not kind:
            return [None]
        if not ref:
            raise LookupError("failed to configure binding: paramRef is required when the policy has a paramKind")
        resource = next((r for r in self._served() if r.api_version == kind.get("apiVersion")
                         and r.kind == kind.get("kind")), None)
        if resource is None:
            raise LookupError(f"failed to configure policy: failed to find resource referenced by paramKind: "
                              f"'{kind.get('apiVersion', '')}, Kind={kind.get('kind', '')}'")
        namespace = str(ref.get("namespace") or (attributes.namespace if resource.namespaced else ""))
        found: list[Any]
        if ref.get("name"):
            one = self._reader.get(resource, namespace, str(ref["name"]))
            found = [one] if one is not None else []
        else:
            try:
                selector = selector_from_label_selector(ref.get("selector") or {})
            except SelectorError as exc:
                raise LookupError(str(exc)) from None
            found = [p for p in self._reader.list_all(resource, namespace)
                     if selector.matches(((p.get("metadata") or {}).get("labels")) or {})]
        if found:
            return found
        if ref.get("parameterNotFoundAction") == "Deny":
            raise _NoParams("no params found for policy binding with `Deny` parameterNotFoundAction")
        return []

    @staticmethod
    def _act(attributes: Attributes, actions: Iterable[str], policy: str, binding: str, failure: Failure) -> None:
        if "Warn" in actions:
            warning.add_warning(f"Validation failed for ValidatingAdmissionPolicy '{policy}' with binding "
                                f"'{binding}': {failure.message}")
        if "Audit" in actions:
            recorded = json.loads(attributes.annotations.get(AUDIT_KEY, "[]"))
            recorded.append({"message": failure.message, "policy": policy, "binding": binding,
                             "expressionIndex": failure.expression_index, "validationActions": list(actions)})
            attributes.annotations[AUDIT_KEY] = json.dumps(recorded, separators=(",", ":"))
        if "Deny" in actions:
            raise refusal(attributes, policy, binding, failure)


class _NoParams(LookupError):
    """No param under parameterNotFoundAction Deny: a refusal whatever the failurePolicy."""

