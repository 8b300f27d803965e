"""Validation of the core/v1 kinds: pods (on update), services, configmaps, secrets, endpoints, events,
resource quotas, limit ranges, namespaces, nodes, replication controllers, persistent volumes and claims.

Upstream: pkg/apis/core/validation/validation.go (ValidatePod/ValidatePodUpdate, ValidateService,
ValidateConfigMap, ValidateSecret, ValidateEndpoints, ValidateResourceQuota, ValidateLimitRange, ValidateEvent,
ValidateReplicationControllerSpec; ValidatePersistentVolumeSpec: at least one access mode, a `storage`
capacity and nothing else, exactly one volume source, a local volume needs node affinity;
ValidatePersistentVolumeUpdate: the volume source and volumeMode never change;
ValidatePersistentVolumeClaimSpec: at least one access mode, a positive `storage` request, a valid
selector; ValidatePersistentVolumeClaimUpdate: the spec is immutable but for resources.requests, and
volumeName / storageClassName may be set once while empty). The pod spec itself is checked in `pods.py`.

The field paths, error types and messages are upstream's (`spec.containers[0].image: Required value`),
because kubectl prints them and people search for them.

Left out: service IP families and load balancer fields; the details inside volume sources other than
hostPath and local, mount options, dataSource, volumeAttributesClassName and the persistent volume status
checks.
"""

from __future__ import annotations

import base64
import binascii
import copy
import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from control.api.validation.pods import (
    template_labels,
    validate_controller_template,
    validate_pod_spec,
)
from control.api.validation.primitives import (
    NEGATIVE_MESSAGE,
    PORT_PROTOCOLS,
    Check,
    NameValidator,
    Validator,
    join,
)
from control.api.volumes import ACCESS_MODES, RECLAIM_POLICIES, VOLUME_MODES
from control.apimachinery.labels import SelectorError, selector_from_label_selector
from control.apimachinery.netutils import legacy_ip_errors, non_special_ip_errors, parse_ip_sloppy
from control.apimachinery.quantity import Quantity
from control.apimachinery.validation import (
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    FieldError,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_port_name,
    is_valid_port_num,
    max_len_error,
    regex_error,
    validate_labels,
)

IP_MESSAGE = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
MAX_SECRET_SIZE = 1024 * 1024  # configmaps and secrets alike (upstream core.MaxSecretSize)
POD_UPDATE_MESSAGE = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY = re.compile(_CONFIG_KEY_FMT)
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
# The persistent volume sources of PersistentVolumeSpec (upstream's list; only hostPath and local mount here).
VOLUME_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "iscsi",
                  "cinder", "cephfs", "fc", "flocker", "flexVolume", "azureFile", "vsphereVolume", "quobyte",
                  "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "local", "storageos", "csi")
CLAIM_UPDATE_MESSAGE = ("spec is immutable after creation except resources.requests and "
                        "volumeAttributesClassName for bound claims")


# --- pods ---------------------------------------------------------------------------------------------

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


# --- endpoints, events, resource quotas, namespaces, nodes --------------------------------------------

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


def _resource_quota(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    for name, value in (c.obj(spec, "hard", "spec.hard") or {}).items():
        path = f"spec.hard[{name}]"
        c.invalid(path, name, is_qualified_name(name))
        if (quantity := c.quantity(value, path)) is not None and quantity < Quantity(0):
            c.add([FieldError.invalid(path, value, NEGATIVE_MESSAGE)])


_LIMIT_FIELDS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")
# (lower field, higher field, the field the error is on, message), in upstream's order
_LIMIT_ORDER = (
    ("min", "max", "min", "min value {lo} is greater than max value {hi}"),
    ("min", "defaultRequest", "defaultRequest", "min value {lo} is greater than default request value {hi}"),
    ("defaultRequest", "max", "defaultRequest", "default request value {lo} is greater than max value {hi}"),
    ("defaultRequest", "default", "defaultRequest",
     "default request value {lo} is greater than default limit value {hi}"),
    ("min", "default", "default", "min value {lo} is greater than default value {hi}"),
    ("default", "max", "default", "default value {lo} is greater than max value {hi}"),
)


def _limit_range(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """Upstream ValidateLimitRange: quantities that parse, Pod items without defaults, a claim item with a
    storage bound, and min <= defaultRequest <= default <= max with a ratio of at least 1 and at most max/min."""
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    for path, item in c.items(spec, "limits", "spec.limits"):
        kind = c.text(item, "type", join(path, "type"))
        if not kind:
            c.add([FieldError.required(join(path, "type"))])
        values: dict[str, dict[str, Quantity]] = {}
        for field in _LIMIT_FIELDS:
            values[field] = {}
            for name, value in (c.obj(item, field, join(path, field)) or {}).items():
                key = f"{join(path, field)}[{name}]"
                c.invalid(key, name, is_qualified_name(name))
                if (quantity := c.quantity(value, key)) is not None:
                    values[field][name] = quantity
        if kind == "Pod":
            c.add([FieldError.forbidden(join(path, field), "may not be specified when `type` is 'Pod'")
                   for field in ("default", "defaultRequest") if values[field]])
        if kind == "PersistentVolumeClaim" and "storage" not in values["min"] and "storage" not in values["max"]:
            c.add([FieldError.required(join(path, "limits"), "either minimum or maximum storage value is required, "
                                                             "but neither was provided")])
        names = {name for field in _LIMIT_FIELDS for name in values[field]}
        for name in sorted(names):
            for low, high, on, message in _LIMIT_ORDER:
                lo, hi = values[low].get(name), values[high].get(name)
                if lo is not None and hi is not None and lo > hi:
                    shown = values[on][name]
                    c.add([FieldError.invalid(f"{join(path, on)}[{name}]", str(shown), message.format(lo=lo, hi=hi))])
            ratio = values["maxLimitRequestRatio"].get(name)
            if ratio is not None and ratio < Quantity(1):
                c.add([FieldError.invalid(f"{join(path, 'maxLimitRequestRatio')}[{name}]", str(ratio),
                                          f"ratio {ratio} is less than 1")])
            low_q, high_q = values["min"].get(name), values["max"].get(name)
            if ratio is not None and low_q is not None and high_q is not None and low_q > Quantity(0) and \
                    ratio.as_fraction() > high_q.as_fraction() / low_q.as_fraction():
                c.add([FieldError.invalid(f"{join(path, 'maxLimitRequestRatio')}[{name}]", str(ratio),
                                          f"ratio {ratio} is greater than max/min = "
                                          f"{float(high_q.as_fraction() / low_q.as_fraction()):f}")])


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


# --- replication controllers ------------------------------------------------------------------------

def _replication_controller(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """Upstream ValidateReplicationControllerSpec: the selector is a plain map, the template a pointer."""
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    for key in ("replicas", "minReadySeconds"):
        c.nonnegative(spec, key, join("spec", key))
    selector = c.strings(spec, "selector", "spec.selector")
    if not selector and isinstance(spec.get("selector"), dict | None):
        c.add([FieldError.required("spec.selector")])
    c.add(validate_labels(selector, path="spec.selector"))
    if spec.get("template") is None:
        c.add([FieldError.required("spec.template")])
    elif (template := c.obj(spec, "template", "spec.template")) is not None:
        labels = template_labels(template)
        selects = all(labels.get(key) == value for key, value in selector.items())
        validate_controller_template(c, template, "spec.template", selects=selects, kind="ReplicationController")


# --- persistent volumes and claims --------------------------------------------------------------------

def _access_modes(c: Check, spec: Mapping[str, Any], path: str, missing: str) -> None:
    modes = c.texts(spec, "accessModes", path)
    if not modes and not spec.get("accessModes"):
        c.add([FieldError.required(path, missing)])
    for mode in modes:
        if mode not in ACCESS_MODES:
            c.add([FieldError.not_supported(path, mode, ACCESS_MODES)])
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        c.add([FieldError.forbidden(path, "may not use ReadWriteOncePod with other access modes")])


def _class_name(c: Check, spec: Mapping[str, Any], path: str) -> None:
    if name := c.text(spec, "storageClassName", path):
        c.invalid(path, name, is_dns1123_subdomain(name))


def _storage(c: Check, resources: Mapping[str, Any], path: str, *, only_storage: bool) -> None:
    if "storage" not in resources:
        c.add([FieldError.required(f"{path}[storage]")])
    for name, value in resources.items():
        if only_storage and name != "storage":
            c.add([FieldError.not_supported(path, name, ["storage"])])
            continue
        quantity = c.quantity(value, f"{path}[{name}]")
        if quantity is not None and name == "storage" and quantity.as_fraction() <= 0:
            c.add([FieldError.invalid(f"{path}[{name}]", value, "must be greater than zero")])


def _persistent_volume(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    _access_modes(c, spec, "spec.accessModes", "must specify at least 1 access mode")
    if (capacity := c.obj(spec, "capacity", "spec.capacity")) is not None:
        if not capacity:
            c.add([FieldError.required("spec.capacity")])
        else:
            _storage(c, capacity, "spec.capacity", only_storage=True)
    c.supported(spec, "persistentVolumeReclaimPolicy", "spec.persistentVolumeReclaimPolicy", RECLAIM_POLICIES)
    c.supported(spec, "volumeMode", "spec.volumeMode", VOLUME_MODES)
    _class_name(c, spec, "spec.storageClassName")
    sources = [name for name in VOLUME_SOURCES if spec.get(name) is not None]
    if not sources:
        c.add([FieldError.required("spec", "must specify a volume type")])
    elif len(sources) > 1:
        c.add([FieldError.forbidden(f"spec.{sources[1]}", "may not specify more than 1 volume type")])
    for source in ("hostPath", "local"):
        if source in sources and (found := c.obj(spec, source, f"spec.{source}")) is not None:
            if not c.text(found, "path", f"spec.{source}.path"):
                c.add([FieldError.required(f"spec.{source}.path")])
    if "local" in sources and not (spec.get("nodeAffinity") or {}).get("required"):
        c.add([FieldError.required("spec.nodeAffinity", "Local volume requires node affinity")])
    c.obj(spec, "claimRef", "spec.claimRef")
    old_spec = old.get("spec") if old is not None else None
    if isinstance(old_spec, Mapping):
        if {k: spec.get(k) for k in VOLUME_SOURCES} != {k: old_spec.get(k) for k in VOLUME_SOURCES}:
            c.add([FieldError.forbidden("spec.persistentvolumesource",
                                        "spec.persistentvolumesource is immutable after creation")])
        c.immutable(spec.get("volumeMode"), old_spec.get("volumeMode"), "spec.volumeMode")
        if old_spec.get("nodeAffinity") is not None:
            c.immutable(spec.get("nodeAffinity"), old_spec.get("nodeAffinity"), "spec.nodeAffinity")


def _claim_spec_without_mutable(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> dict[str, Any]:
    """The spec as far as an update may not change it: requests, and volumeName / storageClassName set
    while they were empty, are taken from `spec` into the old one before comparing."""
    result = copy.deepcopy(dict(old_spec))
    new_resources = spec.get("resources")
    if isinstance(new_resources, Mapping) and isinstance(result.get("resources"), Mapping):
        resources = dict(result["resources"])
        if "requests" in new_resources:
            resources["requests"] = new_resources["requests"]
        else:
            resources.pop("requests", None)
        result["resources"] = resources
    for key in ("volumeName", "storageClassName"):
        if not old_spec.get(key):
            if key in spec:
                result[key] = spec[key]
            else:
                result.pop(key, None)
    return result


def _persistent_volume_claim(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    _access_modes(c, spec, "spec.accessModes", "at least 1 access mode is required")
    resources = c.obj(spec, "resources", "spec.resources")
    requests = c.obj(resources, "requests", "spec.resources.requests") if resources is not None else None
    if requests is not None:
        _storage(c, requests, "spec.resources", only_storage=False)
    c.supported(spec, "volumeMode", "spec.volumeMode", VOLUME_MODES)
    _class_name(c, spec, "spec.storageClassName")
    c.text(spec, "volumeName", "spec.volumeName")
    if spec.get("selector") is not None and (selector := c.obj(spec, "selector", "spec.selector")) is not None:
        try:
            selector_from_label_selector(selector)
        except (SelectorError, AttributeError, TypeError) as exc:
            c.add([FieldError.invalid("spec.selector", selector, str(exc))])
    old_spec = old.get("spec") if old is not None else None
    if isinstance(old_spec, Mapping) and _claim_spec_without_mutable(spec, old_spec) != dict(spec):
        c.add([FieldError.forbidden("spec", CLAIM_UPDATE_MESSAGE)])


NAME_VALIDATORS: dict[str, NameValidator] = {
    "namespaces": is_dns1123_label,
    "services": is_dns1035_label,
}

VALIDATORS: dict[str, Validator] = {
    "pods": _pod,
    "services": _service,
    "configmaps": _config_map,
    "secrets": _secret,
    "endpoints": _endpoints,
    "events": _event,
    "resourcequotas": _resource_quota,
    "limitranges": _limit_range,
    "namespaces": _namespace,
    "nodes": _node,
    "replicationcontrollers": _replication_controller,
    "persistentvolumes": _persistent_volume,
    "persistentvolumeclaims": _persistent_volume_claim,
}
