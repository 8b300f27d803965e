"""Validation of networking.k8s.io/v1 Ingresses, IngressClasses and NetworkPolicies.

Upstream: pkg/apis/networking/validation/validation.go (ValidateIngressCreate/Update and ValidateIngressSpec,
validateIngressRules, validateHTTPIngressPath, validateIngressBackend, ValidateIngressLoadBalancerStatus,
ValidateIngressClass/Update, ValidateNetworkPolicySpec with its ports and peers). Field paths and messages
are upstream's.

Left out: the annotation-based class (`kubernetes.io/ingress.class` together with ingressClassName is
allowed, as upstream allows it in v1), and the IngressClass parameters' API group format check.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from control.api.validation.primitives import PORT_PROTOCOLS, Check, Validator, join, label_selector
from control.apimachinery.netutils import legacy_ip_errors, parse_ip_sloppy
from control.apimachinery.validation import (
    FieldError,
    is_dns1035_label,
    is_dns1123_subdomain,
    is_valid_port_name,
    is_valid_port_num,
    is_wildcard_dns1123_subdomain,
)

PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
# upstream invalidPathSequences and invalidPathSuffixes (Exact and Prefix paths only)
_INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_PATH_SUFFIXES = ("/..", "/.")
MAX_CONTROLLER_LENGTH = 250
POLICY_TYPES = ("Egress", "Ingress")
PARAMETER_SCOPES = ("Cluster", "Namespace")


def _host(c: Check, host: str, path: str) -> None:
    if "*" in host:
        c.invalid(path, host, is_wildcard_dns1123_subdomain(host))
    else:
        c.invalid(path, host, is_dns1123_subdomain(host))


def _backend(c: Check, backend: Mapping[str, Any], path: str) -> None:
    """validateIngressBackend: a service (name and one of port name/number) or a resource, not both."""
    service = c.obj(backend, "service", join(path, "service"))
    resource = c.obj(backend, "resource", join(path, "resource"))
    has_service, has_resource = bool(backend.get("service")), bool(backend.get("resource"))
    if has_service and has_resource:
        c.add([FieldError.invalid(path, "", "cannot set both resource and service backends")])
    elif has_resource and resource is not None:
        if not c.text(resource, "kind", join(path, "resource.kind")):
            c.add([FieldError.required(join(path, "resource.kind"))])
        if not c.text(resource, "name", join(path, "resource.name")):
            c.add([FieldError.required(join(path, "resource.name"))])
    elif has_service and service is not None:
        name = c.text(service, "name", join(path, "service.name"))
        if name == "":
            c.add([FieldError.required(join(path, "service.name"))])
        elif name:
            c.invalid(join(path, "service.name"), name, is_dns1035_label(name))
        port = c.obj(service, "port", join(path, "service.port")) or {}
        port_name = c.text(port, "name", join(path, "service.port.name"))
        number = c.integer(port, "number", join(path, "service.port.number"))
        if port_name and number:
            c.add([FieldError.invalid(join(path, "service.port"), port_name,
                                      "cannot set both port name & port number")])
        elif port_name:
            c.invalid(join(path, "service.port.name"), port_name, is_valid_port_name(port_name))
        elif number:
            c.invalid(join(path, "service.port.number"), number, is_valid_port_num(number))
        else:
            c.add([FieldError.required(join(path, "service.port"), "port name or number is required")])
    else:
        c.add([FieldError.invalid(path, "", "resource or service backend is required")])


def _http_path(c: Check, item: Mapping[str, Any], path: str) -> None:
    """validateHTTPIngressPath."""
    path_type = c.text(item, "pathType", join(path, "pathType"))
    text = c.text(item, "path", join(path, "path")) or ""
    if path_type == "":
        c.add([FieldError.required(join(path, "pathType"), "pathType must be specified")])
    elif path_type in ("Exact", "Prefix"):
        if not text.startswith("/"):
            c.add([FieldError.invalid(join(path, "path"), text, "must be an absolute path")])
        for sequence in _INVALID_PATH_SEQUENCES:
            if sequence in text:
                c.add([FieldError.invalid(join(path, "path"), text, f"must not contain '{sequence}'")])
        for suffix in _INVALID_PATH_SUFFIXES:
            if text.endswith(suffix):
                c.add([FieldError.invalid(join(path, "path"), text, f"cannot end with '{suffix}'")])
    elif path_type == "ImplementationSpecific":
        if text and not text.startswith("/"):
            c.add([FieldError.invalid(join(path, "path"), text, "must be an absolute path")])
    elif path_type is not None:
        c.add([FieldError.not_supported(join(path, "pathType"), path_type, PATH_TYPES)])
    if (backend := c.obj(item, "backend", join(path, "backend"))) is not None:
        _backend(c, backend, join(path, "backend"))


def _ingress_spec(c: Check, spec: Mapping[str, Any]) -> None:
    rules = c.items(spec, "rules", "spec.rules")
    if not rules and spec.get("defaultBackend") is None:
        c.add([FieldError.invalid("spec", spec.get("rules") or [], "either `defaultBackend` or `rules` must be "
                                                                      "specified")])
    if spec.get("defaultBackend") is not None and (backend := c.obj(spec, "defaultBackend", "spec.defaultBackend")):
        _backend(c, backend, "spec.defaultBackend")
    for rule_path, rule in rules:
        host = c.text(rule, "host", join(rule_path, "host"))
        if host:
            if parse_ip_sloppy(host) is not None:
                c.add([FieldError.invalid(join(rule_path, "host"), host, "must be a DNS name, not an IP address")])
            _host(c, host, join(rule_path, "host"))
        if rule.get("http") is None:
            continue
        http = c.obj(rule, "http", join(rule_path, "http"))
        if http is None:
            continue
        paths = c.items(http, "paths", join(rule_path, "http.paths"))
        if not paths:
            c.add([FieldError.required(join(rule_path, "http.paths"))])
        for item_path, item in paths:
            _http_path(c, item, item_path)
    for tls_path, tls in c.items(spec, "tls", "spec.tls"):
        for index, host in enumerate(c.texts(tls, "hosts", join(tls_path, "hosts"))):
            _host(c, host, f"{join(tls_path, 'hosts')}[{index}]")
        if secret := c.text(tls, "secretName", join(tls_path, "secretName")):
            c.invalid(join(tls_path, "secretName"), secret, is_dns1123_subdomain(secret))
    if class_name := c.text(spec, "ingressClassName", "spec.ingressClassName"):
        c.invalid("spec.ingressClassName", class_name, is_dns1123_subdomain(class_name))


def validate_load_balancer_ingress(c: Check, status: Mapping[str, Any], path: str,
                                   old_status: Mapping[str, Any] | None) -> None:
    """ValidateIngressLoadBalancerStatus / core ValidateLoadBalancerStatus: `ip` an address (an old
    object's own address kept whatever its form), `hostname` a DNS name and not an address."""
    old_ips = [entry.get("ip") for entry in ((old_status or {}).get("ingress") or []) if isinstance(entry, dict)]
    for entry_path, entry in c.items(status, "ingress", join(path, "ingress")):
        if ip := c.text(entry, "ip", join(entry_path, "ip")):
            c.invalid(join(entry_path, "ip"), ip, legacy_ip_errors(ip, [v for v in old_ips if isinstance(v, str)]))
        if hostname := c.text(entry, "hostname", join(entry_path, "hostname")):
            c.invalid(join(entry_path, "hostname"), hostname, is_dns1123_subdomain(hostname))
            if parse_ip_sloppy(hostname) is not None:
                c.add([FieldError.invalid(join(entry_path, "hostname"), hostname,
                                          "must be a DNS name, not an IP address")])


def _ingress(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is not None:
        _ingress_spec(c, spec)
    status = c.obj(obj, "status", "status")
    if status and (load_balancer := c.obj(status, "loadBalancer", "status.loadBalancer")) is not None:
        old_status = ((old or {}).get("status") or {}).get("loadBalancer")
        validate_load_balancer_ingress(c, load_balancer, "status.loadBalancer",
                                       old_status if isinstance(old_status, dict) else None)


def _is_domain_prefixed_path(value: str) -> list[str]:
    """Upstream IsDomainPrefixedPath: `example.com/path`, the domain a DNS subdomain."""
    domain, slash, rest = value.partition("/")
    if not slash or not domain or not rest:
        return ["must be a domain-prefixed path (such as \"acme.io/foo\")"]
    return is_dns1123_subdomain(domain)


def _ingress_class(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """ValidateIngressClass: controller required, at most 250 characters, a domain-prefixed path, immutable;
    parameters name a kind and a name, and a namespace exactly when their scope is Namespace."""
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    controller = c.text(spec, "controller", "spec.controller")
    if controller == "":
        c.add([FieldError.required("spec.controller")])
    elif controller is not None:
        if len(controller) > MAX_CONTROLLER_LENGTH:
            c.add([FieldError.too_long("spec.controller", MAX_CONTROLLER_LENGTH)])
        c.invalid("spec.controller", controller, _is_domain_prefixed_path(controller))
    if spec.get("parameters") is not None and (params := c.obj(spec, "parameters", "spec.parameters")) is not None:
        for key in ("kind", "name"):
            if not c.text(params, key, f"spec.parameters.{key}"):
                c.add([FieldError.required(f"spec.parameters.{key}")])
        scope = c.text(params, "scope", "spec.parameters.scope") or ""
        namespace = c.text(params, "namespace", "spec.parameters.namespace") or ""
        if scope and scope not in PARAMETER_SCOPES:
            c.add([FieldError.not_supported("spec.parameters.scope", scope, PARAMETER_SCOPES)])
        if scope == "Namespace" and not namespace:
            c.add([FieldError.required("spec.parameters.namespace", "`parameters.scope` is set to 'Namespace'")])
        if scope in ("", "Cluster") and namespace:
            c.add([FieldError.forbidden("spec.parameters.namespace",
                                        "`parameters.scope` is set to 'Cluster'" if scope else
                                        "`parameters.scope` is not set")])
    if old is not None:
        c.immutable(controller, ((old.get("spec") or {}).get("controller")), "spec.controller")


def _network_policy_port(c: Check, port: Mapping[str, Any], path: str) -> None:
    c.supported(port, "protocol", join(path, "protocol"), PORT_PROTOCOLS)
    value = port.get("port")
    end = c.integer(port, "endPort", join(path, "endPort"))
    if isinstance(value, int) and not isinstance(value, bool):
        c.invalid(join(path, "port"), value, is_valid_port_num(value))
        if end is not None:
            if end < value:
                c.add([FieldError.invalid(join(path, "endPort"), end, "must be greater than or equal to `port`")])
            c.invalid(join(path, "endPort"), end, is_valid_port_num(end))
    elif isinstance(value, str):
        c.invalid(join(path, "port"), value, is_valid_port_name(value))
        if end is not None:
            c.add([FieldError.invalid(join(path, "endPort"), end, "may not be specified when `port` is non-numeric")])
    elif value is not None:
        c.add([FieldError.invalid(join(path, "port"), value, "must be an integer or a string")])
    elif end is not None:
        c.add([FieldError.required(join(path, "port"), "when endPort is specified")])


def _cidr_errors(value: str) -> list[str]:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    return []


def _peer(c: Check, peer: Mapping[str, Any], path: str) -> None:
    """ValidateNetworkPolicyPeer: a pod selector and/or a namespace selector, or an ipBlock alone."""
    selectors = [key for key in ("podSelector", "namespaceSelector") if peer.get(key) is not None]
    for key in selectors:
        if (selector := c.obj(peer, key, join(path, key))) is not None:
            label_selector(c, {"selector": selector}, join(path, key), kind="NetworkPolicy", required=False)
    block = peer.get("ipBlock")
    if block is None:
        if not selectors:
            c.add([FieldError.required(path, "must specify a peer")])
        return
    if selectors:
        c.add([FieldError.forbidden(path, "may not specify both ipBlock and another peer")])
        return
    if (block := c.obj(peer, "ipBlock", join(path, "ipBlock"))) is None:
        return
    cidr = c.text(block, "cidr", join(path, "ipBlock.cidr"))
    if cidr == "":
        c.add([FieldError.required(join(path, "ipBlock.cidr"))])
        return
    if cidr is None or _cidr_errors(cidr):
        c.invalid(join(path, "ipBlock.cidr"), cidr, _cidr_errors(cidr or ""))
        return
    network = ipaddress.ip_network(cidr, strict=False)
    for index, excepted in enumerate(c.texts(block, "except", join(path, "ipBlock.except"))):
        item = f"{join(path, 'ipBlock.except')}[{index}]"
        if errors := _cidr_errors(excepted):
            c.invalid(item, excepted, errors)
            continue
        inner = ipaddress.ip_network(excepted, strict=False)
        if inner.version != network.version or not inner.subnet_of(network) or inner == network:  # type: ignore[arg-type]
            c.add([FieldError.invalid(item, excepted, "must be a strict subset of `cidr`")])


def _network_policy(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return
    if spec.get("podSelector") is not None:
        label_selector(c, {"selector": spec.get("podSelector")}, "spec.podSelector", kind="NetworkPolicy",
                        required=False)
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for rule_path, rule in c.items(spec, direction, f"spec.{direction}"):
            for port_path, port in c.items(rule, "ports", join(rule_path, "ports")):
                _network_policy_port(c, port, port_path)
            for peer_path, peer in c.items(rule, peers, join(rule_path, peers)):
                _peer(c, peer, peer_path)
    types = c.texts(spec, "policyTypes", "spec.policyTypes")
    for index, kind in enumerate(types):
        if kind not in POLICY_TYPES:
            c.add([FieldError.not_supported(f"spec.policyTypes[{index}]", kind, POLICY_TYPES)])
    if len(types) > len(POLICY_TYPES):
        c.add([FieldError.invalid("spec.policyTypes", types, "may not specify more than two policyTypes")])


VALIDATORS: dict[str, Validator] = {
    "ingresses": _ingress,
    "ingressclasses": _ingress_class,
    "networkpolicies": _network_policy,
}
