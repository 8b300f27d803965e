"""Validation of apiregistration.k8s.io/v1 APIServices.

Upstream: k8s.io/kube-aggregator/pkg/apis/apiregistration/validation/validation.go (ValidateAPIService,
ValidateAPIServiceUpdate, ValidateAPIServiceStatus): the name is `{version}.{group}`, priorities within
their ranges, a local APIService (no `service`) carries no TLS settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.validation.primitives import Check, NameValidator, Validator
from control.apimachinery.validation import FieldError, is_dns1035_label, is_dns1123_subdomain

CONDITION_STATUSES = ("False", "True", "Unknown")


def api_service_name_errors(name: str) -> list[str]:
    """The metadata name rule of ValidateAPIService: a path segment (IsValidPathSegmentName) of the form
    `<version>.<group>` (`v1.` for the core group)."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    errors = [f"may not contain '{c}'" for c in ("/", "%") if c in name]
    if "." not in name:
        errors.append("must be in the form: <version>.<group>")
    return errors


def _api_service(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    name = (obj.get("metadata") or {}).get("name")
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    group = c.text(spec, "group", "spec.group") or ""
    version = c.text(spec, "version", "spec.version") or ""
    if isinstance(name, str) and name != f"{version}.{group}":
        c.add([FieldError.invalid("metadata.name", name, 'must be `spec.version+"."+spec.group`')])
    if not group and version != "v1":
        c.add([FieldError.required("spec.group", "only v1 may have an empty group and it better be legacy kube")])
    elif group:
        c.invalid("spec.group", group, is_dns1123_subdomain(group))
    if not version:
        c.add([FieldError.required("spec.version")])
    else:
        c.invalid("spec.version", version, is_dns1035_label(version))
    group_priority = c.integer(spec, "groupPriorityMinimum", "spec.groupPriorityMinimum") or 0
    if not 0 < group_priority <= 20000:
        c.add([FieldError.invalid("spec.groupPriorityMinimum", group_priority,
                                  "must be positive and less than 20000")])
    version_priority = c.integer(spec, "versionPriority", "spec.versionPriority") or 0
    if not 0 < version_priority <= 1000:
        c.add([FieldError.invalid("spec.versionPriority", version_priority, "must be positive and less than 1000")])
    ca_bundle = spec.get("caBundle")
    insecure = spec.get("insecureSkipTLSVerify")
    if spec.get("service") is None:
        if ca_bundle:
            c.add([FieldError.invalid("spec.caBundle", "<ca bundle>", "must not be set if service is not set")])
        if insecure:
            c.add([FieldError.invalid("spec.insecureSkipTLSVerify", insecure,
                                      "must not be set if service is not set")])
    else:
        if (service := c.obj(spec, "service", "spec.service")) is not None:
            for key in ("namespace", "name"):
                if not c.text(service, key, f"spec.service.{key}"):
                    c.add([FieldError.required(f"spec.service.{key}")])
            port = c.integer(service, "port", "spec.service.port")
            if port is not None and not 1 <= port <= 65535:
                c.add([FieldError.invalid("spec.service.port", port, "port is not valid: must be between 1 and "
                                                                     "65535, inclusive")])
        if insecure and ca_bundle:
            c.add([FieldError.invalid("spec.insecureSkipTLSVerify", insecure,
                                      "may not be true if caBundle is present")])
    if (status := c.obj(obj, "status", "status")) is not None:
        for path, condition in c.items(status, "conditions", "status.conditions"):
            c.supported(condition, "status", f"{path}.status", CONDITION_STATUSES, required=True)
            if not c.text(condition, "type", f"{path}.type"):
                c.add([FieldError.required(f"{path}.type")])


NAME_VALIDATORS: dict[str, NameValidator] = {"apiservices": api_service_name_errors}

VALIDATORS: dict[str, Validator] = {
    "apiservices": _api_service,
}
