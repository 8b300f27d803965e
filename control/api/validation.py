"""Validation of API objects on create and update: metadata, pods and the other core/v1 kinds.

Upstream: pkg/apis/core/validation/validation.go (ValidateObjectMeta, ValidatePodSpec, ValidatePodUpdate,
ValidateService, ValidateConfigMap, ValidateSecret, ValidateEndpoints, ValidateResourceQuota, ValidateEvent)
and pkg/apis/coordination/validation. The apps and batch kinds are in `validation_apps.py`, which reuses
this module's pod spec checks; `validate` dispatches to both.

The field paths, error types and messages are upstream's (`spec.containers[0].image: Required value`),
because kubectl prints them and people search for them. Upstream validates typed Go structs that the
JSON decoder already refused to build from a malformed body; here objects are the decoded JSON itself,
so every read goes through `_Check`, which reports a field of the wrong JSON type as `Invalid value:
...: must be of type integer` (where upstream answers 400 with the decoder's message) and lets the rest
of the object be validated. Validation never raises on any JSON value.

Left out: volume source details, probes, security contexts, affinity, topology spread constraints,
ephemeral containers, resource claims, service IP families and load balancer fields, and the rules
behind alpha feature gates. Where upstream answers `Not found` (a volume mount naming no volume), the
FieldError vocabulary has no such type, so the error is `Invalid value` with an explanatory detail.
"""

from __future__ import annotations

import base64
import binascii
import copy
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from control.api.priority import PREEMPTION_POLICIES
from control.apimachinery.netutils import legacy_ip_errors, non_special_ip_errors, parse_ip_sloppy
from control.apimachinery.quantity import Quantity, QuantityError
from control.apimachinery.validation import (
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    FieldError,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_env_var_name,
    is_qualified_name,
    is_valid_port_name,
    is_valid_port_num,
    max_len_error,
    regex_error,
    validate_annotations,
    validate_labels,
)

NEGATIVE_MESSAGE = "must be greater than or equal to 0"
IMMUTABLE_MESSAGE = "field is immutable"
IP_MESSAGE = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
MAX_SECRET_SIZE = 1024 * 1024  # configmaps and secrets alike (upstream core.MaxSecretSize)
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")  # upstream lists a set, hence sorted
RESTART_POLICIES = ("Always", "OnFailure", "Never")
POD_UPDATE_MESSAGE = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
_TYPE_NAMES = {dict: "object", list: "array", str: "string", int: "integer", bool: "boolean"}
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY = re.compile(_CONFIG_KEY_FMT)
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class Check:
    """Collects FieldErrors; its readers return a field only when it holds the expected JSON type."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def add(self, errors: Iterable[FieldError]) -> None:
        self.errors.extend(errors)

    def invalid(self, path: str, value: object, messages: Iterable[str]) -> None:
        self.errors.extend(FieldError.invalid(path, value, message) for message in messages)

    def _typed(self, parent: Mapping[str, Any], key: str, path: str, kind: type) -> Any:
        value = parent.get(key)
        if value is None:
            return None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            self.errors.append(FieldError.invalid(path, value, f"must be of type {_TYPE_NAMES[kind]}"))
            return None
        return value

    def obj(self, parent: Mapping[str, Any], key: str, path: str) -> dict[str, Any] | None:
        """A JSON object: {} when absent (Go's zero value), None when of another type."""
        value = self._typed(parent, key, path, dict)
        return {} if value is None and parent.get(key) is None else value

    def items(self, parent: Mapping[str, Any], key: str, path: str) -> list[tuple[str, dict[str, Any]]]:
        """The objects of a JSON array with their paths (`spec.ports[1]`); other items are reported."""
        result = []
        for index, item in enumerate(self._typed(parent, key, path, list) or ()):
            item_path = f"{path}[{index}]"
            if isinstance(item, dict):
                result.append((item_path, item))
            else:
                self.errors.append(FieldError.invalid(item_path, item, "must be of type object"))
        return result

    def text(self, parent: Mapping[str, Any], key: str, path: str) -> str | None:
        """A string: "" when absent, None when of another type."""
        value = self._typed(parent, key, path, str)
        return "" if value is None and parent.get(key) is None else value

    def texts(self, parent: Mapping[str, Any], key: str, path: str) -> list[str]:
        """A list of strings; items of other types are reported and dropped."""
        result = []
        for index, item in enumerate(self._typed(parent, key, path, list) or ()):
            if isinstance(item, str):
                result.append(item)
            else:
                self.errors.append(FieldError.invalid(f"{path}[{index}]", item, "must be of type string"))
        return result

    def integer(self, parent: Mapping[str, Any], key: str, path: str) -> int | None:
        return self._typed(parent, key, path, int)

    def strings(self, parent: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
        """A map of strings (labels, selectors, configmap data); entries of other types are reported."""
        result = {}
        for name, value in (self._typed(parent, key, path, dict) or {}).items():
            if isinstance(value, str):
                result[name] = value
            else:
                self.errors.append(FieldError.invalid(f"{path}[{name}]", value, "must be of type string"))
        return result

    def nonnegative(self, parent: Mapping[str, Any], key: str, path: str) -> None:
        if (value := self.integer(parent, key, path)) is not None and value < 0:
            self.errors.append(FieldError.invalid(path, value, NEGATIVE_MESSAGE))

    def supported(self, parent: Mapping[str, Any], key: str, path: str, choices: Iterable[str], *,
                  required: bool = False) -> str | None:
        """A string that must be one of `choices`; returns it when it is."""
        value = self.text(parent, key, path)
        if value == "" and required:
            self.errors.append(FieldError.required(path))
        elif value and value not in choices:
            self.errors.append(FieldError.not_supported(path, value, choices))
        return value if value is not None and value in choices else None

    def quantity(self, value: object, path: str) -> Quantity | None:
        """A resource quantity, as a string or a JSON number."""
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.errors.append(FieldError.invalid(path, value, "must be a quantity (a string or a number)"))
            return None
        try:
            return Quantity(value if not isinstance(value, float) else repr(value))
        except (QuantityError, ValueError) as exc:
            self.errors.append(FieldError.invalid(path, value, str(exc)))
            return None

    def immutable(self, new: object, old: object, path: str) -> None:
        if new != old:
            self.errors.append(FieldError.invalid(path, new, IMMUTABLE_MESSAGE))


# --- metadata -----------------------------------------------------------------------------------------

_NAME_VALIDATORS: dict[str, Callable[[str], list[str]]] = {
    "namespaces": is_dns1123_label,
    "services": is_dns1035_label,
}


def validate_object_meta(c: Check, metadata: Mapping[str, Any], path: str, *,
                         name_validator: Callable[[str], list[str]] | None) -> None:
    """Upstream ValidateObjectMeta; `name_validator` None for a pod template, whose name is ignored."""
    if name_validator is not None:
        name = c.text(metadata, "name", join(path, "name"))
        if name == "":
            c.add([FieldError.required(join(path, "name"), "name or generateName is required")])
        elif name is not None:
            c.invalid(join(path, "name"), name, name_validator(name))
    c.add(validate_labels(c.strings(metadata, "labels", join(path, "labels")), path=join(path, "labels")))
    annotations = c.strings(metadata, "annotations", join(path, "annotations"))
    c.add(validate_annotations(annotations, path=join(path, "annotations")))


# --- pods ---------------------------------------------------------------------------------------------

def _container_ports(c: Check, container: Mapping[str, Any], path: str) -> None:
    names: set[str] = set()
    for port_path, port in c.items(container, "ports", join(path, "ports")):
        name = c.text(port, "name", join(port_path, "name"))
        if name:
            c.invalid(join(port_path, "name"), name, is_valid_port_name(name))
            if name in names:
                c.add([FieldError.duplicate(join(port_path, "name"), name)])
            names.add(name)
        number = c.integer(port, "containerPort", join(port_path, "containerPort"))
        if number == 0 or (number is None and port.get("containerPort") is None):
            c.add([FieldError.required(join(port_path, "containerPort"))])
        elif number is not None:
            c.invalid(join(port_path, "containerPort"), number, is_valid_port_num(number))
        if (host_port := c.integer(port, "hostPort", join(port_path, "hostPort"))):
            c.invalid(join(port_path, "hostPort"), host_port, is_valid_port_num(host_port))
        c.supported(port, "protocol", join(port_path, "protocol"), PORT_PROTOCOLS, required=True)


def _resources(c: Check, container: Mapping[str, Any], path: str) -> None:
    """Quantities parse and are not negative; a request is at most its limit (upstream
    ValidateResourceRequirements)."""
    resources = c.obj(container, "resources", path)
    if resources is None:
        return
    parsed: dict[str, dict[str, Quantity]] = {}
    for kind in ("limits", "requests"):
        parsed[kind] = {}
        amounts = c.obj(resources, kind, join(path, kind)) or {}
        for name, value in amounts.items():
            item_path = f"{join(path, kind)}[{name}]"
            c.invalid(item_path, name, is_qualified_name(name))
            if (quantity := c.quantity(value, item_path)) is None:
                continue
            if quantity < Quantity(0):
                c.add([FieldError.invalid(item_path, value, NEGATIVE_MESSAGE)])
            parsed[kind][name] = quantity
    for name, request in parsed["requests"].items():
        limit = parsed["limits"].get(name)
        if limit is not None and request > limit:
            c.add([FieldError.invalid(f"{join(path, 'requests')}[{name}]", str(request),
                                      f"must be less than or equal to {name} limit of {limit}")])


def _container(c: Check, container: Mapping[str, Any], path: str, *, names: set[str], volumes: set[str]) -> None:
    name = c.text(container, "name", join(path, "name"))
    if name == "":
        c.add([FieldError.required(join(path, "name"))])
    elif name is not None:
        c.invalid(join(path, "name"), name, is_dns1123_label(name))
        if name in names:
            c.add([FieldError.duplicate(join(path, "name"), name)])
        names.add(name)
    image = c.text(container, "image", join(path, "image"))
    if image == "":
        c.add([FieldError.required(join(path, "image"))])
    elif image is not None and image != image.strip():
        c.add([FieldError.invalid(join(path, "image"), image, "must not have leading or trailing whitespace")])
    c.supported(container, "imagePullPolicy", join(path, "imagePullPolicy"), ("Always", "IfNotPresent", "Never"))
    c.supported(container, "terminationMessagePolicy", join(path, "terminationMessagePolicy"),
                ("File", "FallbackToLogsOnError"))
    _container_ports(c, container, path)
    for env_path, env in c.items(container, "env", join(path, "env")):
        env_name = c.text(env, "name", join(env_path, "name"))
        if env_name == "":
            c.add([FieldError.required(join(env_path, "name"))])
        elif env_name is not None:
            c.invalid(join(env_path, "name"), env_name, is_env_var_name(env_name))
        c.text(env, "value", join(env_path, "value"))
    _resources(c, container, join(path, "resources"))
    mount_paths: set[str] = set()
    for mount_path, mount in c.items(container, "volumeMounts", join(path, "volumeMounts")):
        volume = c.text(mount, "name", join(mount_path, "name"))
        if volume == "":
            c.add([FieldError.required(join(mount_path, "name"))])
        elif volume is not None and volume not in volumes:
            c.add([FieldError.invalid(join(mount_path, "name"), volume, "not found in `spec.volumes`")])
        target = c.text(mount, "mountPath", join(mount_path, "mountPath"))
        if target == "":
            c.add([FieldError.required(join(mount_path, "mountPath"))])
        elif target is not None and target in mount_paths:
            c.add([FieldError.invalid(join(mount_path, "mountPath"), target, "must be unique")])
        mount_paths.add(target or "")


def validate_pod_spec(c: Check, spec: Mapping[str, Any], path: str, *,
                      claim_volumes: frozenset[str] = frozenset()) -> None:
    """Upstream ValidatePodSpec (the subset described in the module docstring). `claim_volumes`: names a
    volumeMount may use besides `spec.volumes` (a StatefulSet's volumeClaimTemplates)."""
    volumes: set[str] = set()
    for volume_path, volume in c.items(spec, "volumes", join(path, "volumes")):
        name = c.text(volume, "name", join(volume_path, "name"))
        if name == "":
            c.add([FieldError.required(join(volume_path, "name"))])
        elif name is not None:
            c.invalid(join(volume_path, "name"), name, is_dns1123_label(name))
            if name in volumes:
                c.add([FieldError.duplicate(join(volume_path, "name"), name)])
            volumes.add(name)
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, dict) and not claim.get("claimName"):
            c.add([FieldError.required(join(volume_path, "persistentVolumeClaim.claimName"))])
    mountable = volumes | claim_volumes
    names: set[str] = set()
    containers = c.items(spec, "containers", join(path, "containers"))
    if not containers and not spec.get("containers"):
        c.add([FieldError.required(join(path, "containers"))])
    for container_path, container in containers:
        _container(c, container, container_path, names=names, volumes=mountable)
    for container_path, container in c.items(spec, "initContainers", join(path, "initContainers")):
        _container(c, container, container_path, names=names, volumes=mountable)
    c.supported(spec, "restartPolicy", join(path, "restartPolicy"), RESTART_POLICIES, required=True)
    c.supported(spec, "dnsPolicy", join(path, "dnsPolicy"),
                ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"), required=True)
    c.nonnegative(spec, "terminationGracePeriodSeconds", join(path, "terminationGracePeriodSeconds"))
    deadline_path = join(path, "activeDeadlineSeconds")
    if (deadline := c.integer(spec, "activeDeadlineSeconds", deadline_path)) is not None and deadline <= 0:
        c.add([FieldError.invalid(deadline_path, deadline, "must be between 1 and 2147483647, inclusive")])
    node_selector = join(path, "nodeSelector")
    c.add(validate_labels(c.strings(spec, "nodeSelector", node_selector), path=node_selector))
    c.text(spec, "nodeName", join(path, "nodeName"))
    c.items(spec, "tolerations", join(path, "tolerations"))
    class_path = join(path, "priorityClassName")
    if class_name := c.text(spec, "priorityClassName", class_path):
        c.invalid(class_path, class_name, is_dns1123_subdomain(class_name))
    c.integer(spec, "priority", join(path, "priority"))
    c.supported(spec, "preemptionPolicy", join(path, "preemptionPolicy"), PREEMPTION_POLICIES)


def validate_pod_template(c: Check, template: Mapping[str, Any], path: str, *,
                          claim_volumes: frozenset[str] = frozenset()) -> dict[str, Any] | None:
    """Upstream ValidatePodTemplateSpec; returns the template's spec when it is an object."""
    if (metadata := c.obj(template, "metadata", join(path, "metadata"))) is not None:
        validate_object_meta(c, metadata, join(path, "metadata"), name_validator=None)
    if (spec := c.obj(template, "spec", join(path, "spec"))) is not None:
        validate_pod_spec(c, spec, join(path, "spec"), claim_volumes=claim_volumes)
    return spec


def _without_toleration_seconds(tolerations: object) -> list[object]:
    if not isinstance(tolerations, list):
        return []
    return [{k: v for k, v in t.items() if k != "tolerationSeconds"} if isinstance(t, dict) else t
            for t in tolerations]


def _pod_update(c: Check, spec: dict[str, Any], old_spec: dict[str, Any]) -> None:
    """Upstream ValidatePodUpdate: only images, deadlines, grace period and added tolerations change."""
    munged = copy.deepcopy(spec)
    for key in ("containers", "initContainers"):
        new_list, old_list = munged.get(key), old_spec.get(key)
        if isinstance(new_list, list) and isinstance(old_list, list):
            for new_item, old_item in zip(new_list, old_list, strict=False):  # an added container is new
                if isinstance(new_item, dict) and isinstance(old_item, dict):
                    new_item.pop("image", None)
                    if "image" in old_item:
                        new_item["image"] = old_item["image"]
    for key in ("activeDeadlineSeconds", "terminationGracePeriodSeconds", "tolerations"):
        munged.pop(key, None)
        if key in old_spec:
            munged[key] = old_spec[key]
    if munged != old_spec:
        c.add([FieldError.forbidden("spec", POD_UPDATE_MESSAGE)])
    kept = _without_toleration_seconds(spec.get("tolerations"))
    if any(t not in kept for t in _without_toleration_seconds(old_spec.get("tolerations"))):
        c.add([FieldError.forbidden("spec.tolerations",
                                    "existing toleration can not be modified except its tolerationSeconds")])


def _pod(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    validate_pod_spec(c, spec, "spec")
    if old is not None and isinstance(old_spec := old.get("spec"), dict):
        _pod_update(c, spec, old_spec)


# --- services -----------------------------------------------------------------------------------------

def _service_port(c: Check, port: Mapping[str, Any], path: str, *, names: set[str], need_name: bool,
                  service_type: str | None) -> None:
    name = c.text(port, "name", join(path, "name"))
    if name == "" and need_name:
        c.add([FieldError.required(join(path, "name"))])
    elif name:
        c.invalid(join(path, "name"), name, is_dns1123_label(name))
        if name in names:
            c.add([FieldError.duplicate(join(path, "name"), name)])
        names.add(name)
    number = c.integer(port, "port", join(path, "port"))
    if number is None and port.get("port") is None:
        number = 0
    if number is not None:
        c.invalid(join(path, "port"), number, is_valid_port_num(number))
    c.supported(port, "protocol", join(path, "protocol"), PORT_PROTOCOLS, required=True)
    target = port.get("targetPort")
    if isinstance(target, int) and not isinstance(target, bool):
        c.invalid(join(path, "targetPort"), target, is_valid_port_num(target))
    elif isinstance(target, str):
        c.invalid(join(path, "targetPort"), target, is_valid_port_name(target))
    elif target is not None:
        c.add([FieldError.invalid(join(path, "targetPort"), target, "must be an integer or a string")])
    if node_port := c.integer(port, "nodePort", join(path, "nodePort")):
        c.invalid(join(path, "nodePort"), node_port, is_valid_port_num(node_port))
        if service_type in ("ClusterIP", "ExternalName"):
            c.add([FieldError.forbidden(join(path, "nodePort"),
                                        f"may not be used when `type` is '{service_type}'")])


def _ip_errors(value: str) -> list[str]:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return [IP_MESSAGE]
    return []


def _service(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """Upstream ValidateService and, on update, the immutable cluster IP of ValidateServiceUpdate."""
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    service_type = c.supported(spec, "type", "spec.type", ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"),
                               required=True)
    cluster_ip = c.text(spec, "clusterIP", "spec.clusterIP")
    if cluster_ip and cluster_ip != "None":
        if service_type == "ExternalName":
            c.add([FieldError.forbidden("spec.clusterIP", "may not be set for ExternalName services")])
        else:
            c.invalid("spec.clusterIP", cluster_ip, _ip_errors(cluster_ip))
    if service_type == "ExternalName":
        external = c.text(spec, "externalName", "spec.externalName")
        if external == "":
            c.add([FieldError.required("spec.externalName")])
        elif external is not None:
            c.invalid("spec.externalName", external, is_dns1123_subdomain(external.removesuffix(".")))
    ports = c.items(spec, "ports", "spec.ports")
    if not ports and not spec.get("ports") and cluster_ip != "None" and service_type != "ExternalName":
        c.add([FieldError.required("spec.ports")])
    names: set[str] = set()
    for port_path, port in ports:
        _service_port(c, port, port_path, names=names, need_name=len(ports) > 1, service_type=service_type)
    c.supported(spec, "sessionAffinity", "spec.sessionAffinity", ("ClientIP", "None"), required=True)
    c.add(validate_labels(c.strings(spec, "selector", "spec.selector"), path="spec.selector"))
    old_spec = old.get("spec") if old is not None else None
    old_external = (old_spec or {}).get("externalIPs") if isinstance(old_spec, dict) else None
    old_external = [ip for ip in old_external or [] if isinstance(ip, str)] if isinstance(old_external, list) else []
    for index, ip in enumerate(c.texts(spec, "externalIPs", "spec.externalIPs")):
        errors = legacy_ip_errors(ip, old_external)
        c.invalid(f"spec.externalIPs[{index}]", ip, errors or non_special_ip_errors(ip))
    _service_status(c, obj, old)
    if isinstance(old_spec, dict) and cluster_ip:
        old_ip = old_spec.get("clusterIP")
        if old_ip and "ExternalName" not in (old_spec.get("type"), service_type):
            c.immutable(cluster_ip, old_ip, "spec.clusterIP")


def _service_status(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """Upstream ValidateLoadBalancerStatus: ingress `ip` an address (leading zeros only where the old object
    already had that very address), `hostname` a DNS name that is not an address, `ipMode` with an `ip`."""
    if not isinstance(obj.get("status"), dict) or (status := c.obj(obj, "status", "status")) is None:
        return
    if (load_balancer := c.obj(status, "loadBalancer", "status.loadBalancer")) is None:
        return
    old_ingress = (((old or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    old_ips = [entry["ip"] for entry in old_ingress if isinstance(entry, dict) and isinstance(entry.get("ip"), str)]
    for path, entry in c.items(load_balancer, "ingress", "status.loadBalancer.ingress"):
        ip = c.text(entry, "ip", join(path, "ip"))
        if ip:
            c.invalid(join(path, "ip"), ip, legacy_ip_errors(ip, old_ips))
        if hostname := c.text(entry, "hostname", join(path, "hostname")):
            c.invalid(join(path, "hostname"), hostname, is_dns1123_subdomain(hostname))
            if parse_ip_sloppy(hostname) is not None:
                c.add([FieldError.invalid(join(path, "hostname"), hostname, "must be a DNS name, not an IP address")])
        if entry.get("ipMode") is not None and not ip:
            c.add([FieldError.forbidden(join(path, "ipMode"), "may not be specified when `ip` is not set")])
        elif entry.get("ipMode") is not None:
            c.supported(entry, "ipMode", join(path, "ipMode"), ("Proxy", "VIP"))


# --- configmaps, secrets ------------------------------------------------------------------------------

def config_key_errors(key: str) -> list[str]:
    """Upstream IsConfigMapKey: keys of configmap and secret data become file names in a volume."""
    errors = []
    if len(key) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _CONFIG_KEY.fullmatch(key):
        errors.append(regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if key == ".":
        errors.append("must not be '.'")
    elif key == "..":
        errors.append("must not be '..'")
    elif key.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def _base64_size(c: Check, values: Mapping[str, str], path: str) -> int:
    """The decoded size of base64 values; undecodable ones are reported (their content is not echoed)."""
    size = 0
    for key, value in values.items():
        try:
            size += len(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError):
            c.add([FieldError.invalid(f"{path}[{key}]", "<value omitted>", "must be a valid base64 string")])
    return size


def _keys(c: Check, values: Mapping[str, object], path: str) -> None:
    for key in values:
        c.invalid(f"{path}[{key}]", key, config_key_errors(key))


def _immutable_data(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None, fields: tuple[str, ...]) -> None:
    if old is None or old.get("immutable") is not True:
        return
    for key in fields:
        if obj.get(key) != old.get(key):
            c.add([FieldError.forbidden(key, "field is immutable when `immutable` is set")])
    if obj.get("immutable") is not True:
        c.add([FieldError.forbidden("immutable", "field is immutable when `immutable` is set")])


def _config_map(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    data = c.strings(obj, "data", "data")
    binary = c.strings(obj, "binaryData", "binaryData")
    _keys(c, data, "data")
    _keys(c, binary, "binaryData")
    c.add(FieldError.invalid(f"binaryData[{key}]", key, "duplicate of key present in data")
          for key in binary if key in data)
    size = sum(len(key) + len(value.encode("utf-8", "surrogatepass")) for key, value in data.items())
    if size + sum(len(key) for key in binary) + _base64_size(c, binary, "binaryData") > MAX_SECRET_SIZE:
        c.add([FieldError.too_long("data", MAX_SECRET_SIZE)])
    _immutable_data(c, obj, old, ("data", "binaryData"))


def _secret(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    data = c.strings(obj, "data", "data")
    string_data = c.strings(obj, "stringData", "stringData")
    _keys(c, data, "data")
    _keys(c, string_data, "stringData")
    size = _base64_size(c, data, "data")
    size += sum(len(value.encode("utf-8", "surrogatepass")) for value in string_data.values())
    if size > MAX_SECRET_SIZE:
        c.add([FieldError.too_long("data", MAX_SECRET_SIZE)])
    secret_type = c.text(obj, "type", "type")
    if secret_type == "kubernetes.io/tls":
        c.add(FieldError.required(f"data[{key}]") for key in ("tls.crt", "tls.key")
              if key not in data and key not in string_data)
    elif secret_type == "kubernetes.io/dockerconfigjson" and ".dockerconfigjson" not in {*data, *string_data}:
        c.add([FieldError.required("data[.dockerconfigjson]")])
    if old is not None:
        c.immutable(obj.get("type"), old.get("type"), "type")
    _immutable_data(c, obj, old, ("data",))


# --- endpoints, events, leases, resource quotas -------------------------------------------------------

def _endpoints(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    for subset_path, subset in c.items(obj, "subsets", "subsets"):
        for key in ("addresses", "notReadyAddresses"):
            for address_path, address in c.items(subset, key, join(subset_path, key)):
                ip = c.text(address, "ip", join(address_path, "ip"))
                if ip == "":
                    c.add([FieldError.required(join(address_path, "ip"))])
                elif ip is not None:
                    c.invalid(join(address_path, "ip"), ip, _ip_errors(ip))
        ports = c.items(subset, "ports", join(subset_path, "ports"))
        names: set[str] = set()
        for port_path, port in ports:
            _service_port(c, port, port_path, names=names, need_name=len(ports) > 1, service_type=None)


def _event(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    involved = c.obj(obj, "involvedObject", "involvedObject")
    if involved == {}:
        c.add([FieldError.required("involvedObject")])
    for key in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
        c.text(involved or {}, key, join("involvedObject", key))
    for key in ("reason", "message", "type", "firstTimestamp", "lastTimestamp", "eventTime", "action",
                "reportingComponent", "reportingInstance"):
        c.text(obj, key, key)
    c.integer(obj, "count", "count")
    c.strings(obj, "source", "source")
    if (series := c.obj(obj, "series", "series")) is not None:
        c.integer(series, "count", "series.count")
        c.text(series, "lastObservedTime", "series.lastObservedTime")


def _lease(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    c.text(spec, "holderIdentity", "spec.holderIdentity")
    duration = c.integer(spec, "leaseDurationSeconds", "spec.leaseDurationSeconds")
    if duration is not None and duration <= 0:
        c.add([FieldError.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")])
    c.nonnegative(spec, "leaseTransitions", "spec.leaseTransitions")


def _resource_quota(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    for name, value in (c.obj(spec, "hard", "spec.hard") or {}).items():
        path = f"spec.hard[{name}]"
        c.invalid(path, name, is_qualified_name(name))
        if (quantity := c.quantity(value, path)) is not None and quantity < Quantity(0):
            c.add([FieldError.invalid(path, value, NEGATIVE_MESSAGE)])


def _namespace(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """spec and status are typed upstream (spec.finalizers a list of strings); the finalizers decide
    when a terminating namespace goes, so they must never be stored as anything else."""
    if (spec := c.obj(obj, "spec", "spec")) is not None:
        c.texts(spec, "finalizers", "spec.finalizers")
    if (status := c.obj(obj, "status", "status")) is not None:
        c.text(status, "phase", "status.phase")


def _node(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """The typed shape of what the kubelet reports and the scheduler, printers and controllers read."""
    if (spec := c.obj(obj, "spec", "spec")) is not None:
        c.text(spec, "podCIDR", "spec.podCIDR")
        c.texts(spec, "podCIDRs", "spec.podCIDRs")
        for path, taint in c.items(spec, "taints", "spec.taints"):
            for key in ("key", "value", "effect"):
                c.text(taint, key, join(path, key))
    if (status := c.obj(obj, "status", "status")) is None:
        return
    for path, condition in c.items(status, "conditions", "status.conditions"):
        for key in ("type", "status", "reason", "message"):
            c.text(condition, key, join(path, key))
    for path, address in c.items(status, "addresses", "status.addresses"):
        for key in ("type", "address"):
            c.text(address, key, join(path, key))
    c.strings(status, "nodeInfo", "status.nodeInfo")
    for key in ("capacity", "allocatable"):
        for name, value in (c.obj(status, key, f"status.{key}") or {}).items():
            c.quantity(value, f"status.{key}[{name}]")
    if (endpoints := c.obj(status, "daemonEndpoints", "status.daemonEndpoints")) is not None:
        if (kubelet := c.obj(endpoints, "kubeletEndpoint", "status.daemonEndpoints.kubeletEndpoint")) is not None:
            c.integer(kubelet, "Port", "status.daemonEndpoints.kubeletEndpoint.Port")


Validator = Callable[[Check, Mapping[str, Any], Mapping[str, Any] | None], None]

_VALIDATORS: dict[str, Validator] = {
    "pods": _pod,
    "services": _service,
    "configmaps": _config_map,
    "secrets": _secret,
    "endpoints": _endpoints,
    "events": _event,
    "leases": _lease,
    "resourcequotas": _resource_quota,
    "namespaces": _namespace,
    "nodes": _node,
}


def validate(plural: str, obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> list[FieldError]:
    """Every error of a `plural` object about to be stored; `old` is the stored object on update."""
    # Imported here, not at the top: validation_apps and validation_scheduling build on this module.
    from control.api.validation_admissionregistration import ADMISSIONREGISTRATION_VALIDATORS
    from control.api.validation_apiregistration import APIREGISTRATION_NAME_VALIDATORS, APIREGISTRATION_VALIDATORS
    from control.api.validation_apps import APPS_VALIDATORS
    from control.api.validation_autoscaling import AUTOSCALING_VALIDATORS
    from control.api.validation_certificates import CERTIFICATES_VALIDATORS
    from control.api.validation_csi import CSI_NAME_VALIDATORS, CSI_VALIDATORS
    from control.api.validation_discovery import DISCOVERY_VALIDATORS
    from control.api.validation_networking import NETWORKING_VALIDATORS
    from control.api.validation_node import NODE_VALIDATORS
    from control.api.validation_scheduling import SCHEDULING_VALIDATORS
    from control.api.validation_storage import STORAGE_VALIDATORS

    c = Check()
    if not isinstance(obj, dict):
        return [FieldError.invalid("", obj, "must be of type object")]
    if (metadata := c.obj(obj, "metadata", "metadata")) is not None:
        name_validator = (_NAME_VALIDATORS.get(plural) or CSI_NAME_VALIDATORS.get(plural)
                          or APIREGISTRATION_NAME_VALIDATORS.get(plural) or is_dns1123_subdomain)
        validate_object_meta(c, metadata, "metadata", name_validator=name_validator)
    validator = (_VALIDATORS.get(plural) or APPS_VALIDATORS.get(plural) or SCHEDULING_VALIDATORS.get(plural)
                 or DISCOVERY_VALIDATORS.get(plural) or STORAGE_VALIDATORS.get(plural)
                 or NETWORKING_VALIDATORS.get(plural)
                 or CSI_VALIDATORS.get(plural) or CERTIFICATES_VALIDATORS.get(plural) or NODE_VALIDATORS.get(plural)
                 or ADMISSIONREGISTRATION_VALIDATORS.get(plural) or APIREGISTRATION_VALIDATORS.get(plural)
                 or AUTOSCALING_VALIDATORS.get(plural))
    if validator is not None:
        validator(c, obj, old if isinstance(old, dict) else None)
    return c.errors

