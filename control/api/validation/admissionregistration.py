"""Validation of admissionregistration.k8s.io/v1 Validating- and MutatingWebhookConfigurations (the admission
chain calls them: control/apiserver/admission/webhook/), ValidatingAdmissionPolicies and their bindings (the
structure; their CEL is compiled where it runs, control/apiserver/admission/policy.py).

Upstream: pkg/apis/admissionregistration/validation/validation.go (validateValidatingWebhookConfiguration,
validateMutatingWebhookConfiguration, validateWebhook, ValidateWebhookClientConfig, validateRuleWithOperations,
the v1 rules: `sideEffects` None or NoneOnDryRun, `admissionReviewVersions` required;
validateValidatingAdmissionPolicySpec, validateValidatingAdmissionPolicyBindingSpec, validateParamRef).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from control.api.validation.primitives import Check, Validator, join, label_selector
from control.apimachinery.validation import FieldError, is_dns1123_subdomain

FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
SIDE_EFFECTS = ("None", "NoneOnDryRun")  # v1 refuses Unknown and Some
REINVOCATION_POLICIES = ("IfNeeded", "Never")
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
REVIEW_VERSIONS = ("v1", "v1beta1")


def _client_config(c: Check, config: Mapping[str, Any], path: str) -> None:
    url = config.get("url")
    service = config.get("service")
    if (url is None) == (service is None):
        c.add([FieldError.required(path, "exactly one of url or service is required")])
        return
    if url is not None:
        text = c.text(config, "url", join(path, "url"))
        if text is None:
            return
        parts = urlsplit(text)
        if parts.scheme != "https":
            c.add([FieldError.invalid(join(path, "url"), text, "'https' is the only allowed URL scheme")])
        if not parts.hostname:
            c.add([FieldError.invalid(join(path, "url"), text, "host must be specified")])
        if parts.fragment:
            c.add([FieldError.invalid(join(path, "url"), text, "fragments are not permitted")])
        if parts.query:
            c.add([FieldError.invalid(join(path, "url"), text, "query parameters are not permitted")])
        return
    if (ref := c.obj(config, "service", join(path, "service"))) is None:
        return
    for key in ("namespace", "name"):
        if not c.text(ref, key, join(path, f"service.{key}")):
            c.add([FieldError.required(join(path, f"service.{key}"), f"service {key} is required")])
    port = c.integer(ref, "port", join(path, "service.port"))
    if port is not None and not 1 <= port <= 65535:
        c.add([FieldError.invalid(join(path, "service.port"), port, "port is not valid: must be between 1 and "
                                                                     "65535, inclusive")])
    service_path = c.text(ref, "path", join(path, "service.path"))
    if service_path and not service_path.startswith("/"):
        c.add([FieldError.invalid(join(path, "service.path"), service_path, "must start with a '/'")])


def _rule(c: Check, rule: Mapping[str, Any], path: str) -> None:
    operations = c.texts(rule, "operations", join(path, "operations"))
    if not operations:
        c.add([FieldError.required(join(path, "operations"))])
    if len(operations) > 1 and "*" in operations:
        c.add([FieldError.invalid(join(path, "operations"), operations,
                                  "if '*' is present, must not specify other operations")])
    for index, operation in enumerate(operations):
        if operation not in OPERATIONS:
            c.add([FieldError.not_supported(f"{join(path, 'operations')}[{index}]", operation, OPERATIONS)])
    for key in ("apiGroups", "apiVersions", "resources"):
        values = c.texts(rule, key, join(path, key))
        if not values:
            c.add([FieldError.required(join(path, key))])
        if len(values) > 1 and "*" in values:
            c.add([FieldError.invalid(join(path, key), values, "if '*' is present, must not specify other "
                                                                 + {"apiGroups": "API groups",
                                                                    "apiVersions": "API versions",
                                                                    "resources": "resources"}[key])])
    c.supported(rule, "scope", join(path, "scope"), SCOPES)


def _webhook(c: Check, webhook: Mapping[str, Any], path: str, *, names: set[str], mutating: bool) -> None:
    name = c.text(webhook, "name", join(path, "name"))
    if name == "":
        c.add([FieldError.required(join(path, "name"))])
    elif name is not None:
        c.invalid(join(path, "name"), name, is_dns1123_subdomain(name))
        if name.count(".") < 2:
            c.add([FieldError.invalid(join(path, "name"), name, "should be a domain with at least three segments "
                                                                  "separated by dots")])
        if name in names:
            c.add([FieldError.duplicate(join(path, "name"), name)])
        names.add(name)
    for rule_path, rule in c.items(webhook, "rules", join(path, "rules")):
        _rule(c, rule, rule_path)
    c.supported(webhook, "failurePolicy", join(path, "failurePolicy"), FAILURE_POLICIES)
    c.supported(webhook, "matchPolicy", join(path, "matchPolicy"), MATCH_POLICIES)
    c.supported(webhook, "sideEffects", join(path, "sideEffects"), SIDE_EFFECTS, required=True)
    if mutating:
        c.supported(webhook, "reinvocationPolicy", join(path, "reinvocationPolicy"), REINVOCATION_POLICIES)
    timeout = c.integer(webhook, "timeoutSeconds", join(path, "timeoutSeconds"))
    if timeout is not None and not 1 <= timeout <= 30:
        c.add([FieldError.invalid(join(path, "timeoutSeconds"), timeout,
                                  "the timeout value must be between 1 and 30 seconds")])
    versions = c.texts(webhook, "admissionReviewVersions", join(path, "admissionReviewVersions"))
    if not versions:
        c.add([FieldError.required(join(path, "admissionReviewVersions"), "must specify one of v1, v1beta1")])
    elif not any(v in REVIEW_VERSIONS for v in versions):
        c.add([FieldError.invalid(join(path, "admissionReviewVersions"), versions,
                                  "must include at least one of v1, v1beta1")])
    for key in ("namespaceSelector", "objectSelector"):
        if webhook.get(key) is not None:
            label_selector(c, {"selector": webhook.get(key)}, join(path, key), kind="", required=False)
    if (config := c.obj(webhook, "clientConfig", join(path, "clientConfig"))) is not None:
        _client_config(c, config, join(path, "clientConfig"))


def _configuration(mutating: bool) -> Validator:
    def validate(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        names: set[str] = set()
        for path, webhook in c.items(obj, "webhooks", "webhooks"):
            _webhook(c, webhook, path, names=names, mutating=mutating)
    return validate


VALIDATION_ACTIONS = ("Audit", "Deny", "Warn")
PARAMETER_NOT_FOUND_ACTIONS = ("Allow", "Deny")


def _match_resources(c: Check, match: Mapping[str, Any], path: str, *, required: bool) -> None:
    rules = c.items(match, "resourceRules", join(path, "resourceRules"))
    if required and not rules:
        c.add([FieldError.required(join(path, "resourceRules"))])
    for key in ("resourceRules", "excludeResourceRules"):
        for rule_path, rule in c.items(match, key, join(path, key)):
            _rule(c, rule, rule_path)
    c.supported(match, "matchPolicy", join(path, "matchPolicy"), MATCH_POLICIES)
    for key in ("namespaceSelector", "objectSelector"):
        if match.get(key) is not None:
            label_selector(c, {"selector": match.get(key)}, join(path, key), kind="", required=False)


def _policy(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    validations = c.items(spec, "validations", "spec.validations")
    if not validations and not spec.get("auditAnnotations"):
        c.add([FieldError.required("spec.validations", "validations or auditAnnotations must contain at least "
                                                       "one item")])
    for path, validation in validations:
        if not c.text(validation, "expression", join(path, "expression")):
            c.add([FieldError.required(join(path, "expression"), "expression is not specified")])
    c.supported(spec, "failurePolicy", "spec.failurePolicy", FAILURE_POLICIES)
    if spec.get("paramKind") is not None and (kind := c.obj(spec, "paramKind", "spec.paramKind")) is not None:
        for key in ("apiVersion", "kind"):
            if not c.text(kind, key, f"spec.paramKind.{key}"):
                c.add([FieldError.required(f"spec.paramKind.{key}")])
    match = c.obj(spec, "matchConstraints", "spec.matchConstraints")
    if not spec.get("matchConstraints"):
        c.add([FieldError.required("spec.matchConstraints")])
    elif match is not None:
        _match_resources(c, match, "spec.matchConstraints", required=True)


def _binding(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    if not c.text(spec, "policyName", "spec.policyName"):
        c.add([FieldError.required("spec.policyName")])
    actions = c.texts(spec, "validationActions", "spec.validationActions")
    if not actions:
        c.add([FieldError.required("spec.validationActions", "at least one validation action is required")])
    for index, action in enumerate(actions):
        if action not in VALIDATION_ACTIONS:
            c.add([FieldError.not_supported(f"spec.validationActions[{index}]", action, VALIDATION_ACTIONS)])
        elif action in actions[:index]:
            c.add([FieldError.duplicate(f"spec.validationActions[{index}]", action)])
    if "Deny" in actions and "Warn" in actions:
        c.add([FieldError.invalid("spec.validationActions", actions, "must not contain both Deny and Warn "
                                  "(repeating the same validation failure information in the API response and "
                                  "headers serves no purpose)")])
    if spec.get("paramRef") is not None and (ref := c.obj(spec, "paramRef", "spec.paramRef")) is not None:
        if bool(ref.get("name")) == (ref.get("selector") is not None):
            c.add([FieldError.required("spec.paramRef.name", "one of name or selector must be specified")])
        c.supported(ref, "parameterNotFoundAction", "spec.paramRef.parameterNotFoundAction",
                    PARAMETER_NOT_FOUND_ACTIONS, required=True)
    if spec.get("matchResources") and (match := c.obj(spec, "matchResources", "spec.matchResources")) is not None:
        _match_resources(c, match, "spec.matchResources", required=False)


VALIDATORS: dict[str, Validator] = {
    "validatingwebhookconfigurations": _configuration(mutating=False),
    "mutatingwebhookconfigurations": _configuration(mutating=True),
    "validatingadmissionpolicies": _policy,
    "validatingadmissionpolicybindings": _binding,
}
