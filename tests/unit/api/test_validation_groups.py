"""Validation and defaults of the served groups beyond core/apps (networking, storage CSI, certificates,
node, admissionregistration, apiregistration) and of Service externalIPs / load-balancer addresses, against
upstream's field paths and messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from control.api.defaults import apply_defaults
from control.api.validation import validate

Obj = dict[str, Any]
# a real PKCS#10 request (openssl req -new), base64 of its PEM as kubectl sends it
CSR_REQUEST = (
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQ1V6Q0NBVHNDQVFBd0RqRU1NQW9HQTFVRUF3d0RZbTlpTUlJ"
    "QklqQU5CZ2txaGtpRzl3MEJBUUVGQUFPQwpBUThBTUlJQkNnS0NBUUVBa2RuajdSN1MrQTduQ20wSlVsclRnMUxkN1dLTGd4c3g3"
    "ZVBwMDdaUk5vYndNeDVCCnNVWUd0WW1DZ2VoMzArbmhreGxLZzNxR05uSS9oMGtKTDd2MHBtc2VabkdlNHAwNzJVcjltc1VYWmlS"
    "THI4cy8KTGpDdEJ2SEw1bVlmNzdvandiNTl3dERkVFB1QmJ5cDRQaTQxZ2h4S3ZJTVNyQit2aWtHZjVnY3dBQ05tcy9rWQpGTzlo"
    "ZEwwUUh0L2gyWlV5bGhXa3hVcUN5TTRIWlljcnprcG94U0hXTURMbm10eitmRlVQVyt2Uzg0ZERJM0tGCk1CbDBtUEpWdG1lMVc4"
    "c1VUOXZuNjFMTzMzUkpFQkJiNVJsZUZUOXNnZE01UHZnWHdSTEYvRUFXM0ZHZUYyZnYKeUJyQXpaei9KSU5VMlJmSUlCWjVaZnhX"
    "V2NTY0xTa250QXNFaVFJREFRQUJvQUF3RFFZSktvWklodmNOQVFFTApCUUFEZ2dFQkFJZDZuWFlMTk9DVDBpcHVYeVZuQ0dUVnhy"
    "S2d6YlhYVjZYbGVwRWlncUl6aWc3blZwMVpjb3czCnlMcnZKSjJmNkI3YTB2QThWSDMxQzI0b3Z2OTFaNkNIbkd3VzdkUHgxd2ZO"
    "RE40QU1nSXBhZEFBbVBlUGxuaFQKT2tzSDZQV0hEYmJiWjlMVloyVzlmWnJnbkpsTHFrWkE0Z1h5MDZVcnBoeGkySmpXQ1QwUDNv"
    "emFUUUl0aFI3TQpIOWpoczlaRjVMbG5YSkxWNi9PaHBYdWUyekowREgvSlF3d0FSMEdkZVlzK3Y5SktZZmN2RllRUnludlhwVitl"
    "Clo1TmcyRkdZUWFaMFpsRW92Q1BXU2NnSnV6VFM2cm5pYU85Rlh5NHdET1NwMWJRd1pQcVdXRThrcnVlaElhemMKVFgyK2c2MSt2"
    "ZFdTY1N2Mnl1c0RiZHpBSS9NdGs5WT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg=="
)


def _meta(name: str = "a", namespace: str | None = "default") -> Obj:
    return {"name": name, **({"namespace": namespace} if namespace else {})}


VALID: dict[str, Obj] = {
    "ingresses": {"metadata": _meta(), "spec": {"ingressClassName": "nginx", "rules": [{"host": "foo.example.com",
                  "http": {"paths": [{"path": "/api", "pathType": "Prefix", "backend": {"service": {
                      "name": "api", "port": {"number": 8080}}}}]}}], "tls": [{"hosts": ["*.example.com"],
                                                                              "secretName": "tls"}]}},
    "ingressclasses": {"metadata": _meta(namespace=None), "spec": {"controller": "k8s.io/ingress-nginx"}},
    "networkpolicies": {"metadata": _meta(), "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "ingress": [{
        "from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}, {"podSelector": {}}],
        "ports": [{"port": 5432, "endPort": 5440}]}]}},
    "csidrivers": {"metadata": _meta("csi.example.com", None), "spec": {}},
    "csinodes": {"metadata": _meta("node-1", None), "spec": {"drivers": [{"name": "csi.example.com",
                                                                         "nodeID": "node-1"}]}},
    "volumeattachments": {"metadata": _meta("va", None), "spec": {"attacher": "csi.example.com", "nodeName": "node-1",
                                                                  "source": {"persistentVolumeName": "pv-1"}}},
    "certificatesigningrequests": {"metadata": _meta("alice", None), "spec": {
        "request": CSR_REQUEST, "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"],
        "expirationSeconds": 3600}},
    "runtimeclasses": {"metadata": _meta("gvisor", None), "handler": "runsc",
                       "overhead": {"podFixed": {"cpu": "250m"}}},
    "validatingwebhookconfigurations": {"metadata": _meta("policy", None), "webhooks": [{
        "name": "check.policy.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"namespace": "policy", "name": "webhook"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]},
    "mutatingwebhookconfigurations": {"metadata": _meta("inject", None), "webhooks": [{
        "name": "inject.sidecar.example.com", "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://inject.example.com/mutate"}}]},
    "apiservices": {"metadata": _meta("v1beta1.custom.example.com", None), "spec": {
        "group": "custom.example.com", "version": "v1beta1", "groupPriorityMinimum": 1000, "versionPriority": 15,
        "service": {"namespace": "custom", "name": "api"}, "caBundle": "Zm9v"}},
    "services": {"metadata": _meta(), "spec": {"type": "ClusterIP", "sessionAffinity": "None", "ports": [
        {"port": 80, "protocol": "TCP"}], "externalIPs": ["192.0.2.10", "2001:db8::10"]}},
}


def _errors(plural: str, obj: Obj, old: Obj | None = None) -> list[str]:
    obj = copy.deepcopy(obj)
    apply_defaults(plural, obj)
    if old is not None:
        old = copy.deepcopy(old)
        apply_defaults(plural, old)
    return [e.message for e in validate(plural, obj, old=old)]


@pytest.mark.parametrize("plural", sorted(VALID))
def test_valid_objects_pass(plural: str) -> None:
    assert _errors(plural, VALID[plural]) == []


def _with(plural: str, path: str, value: Any) -> Obj:
    obj = copy.deepcopy(VALID[plural])
    *parents, last = path.split(".")
    target: Any = obj
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if isinstance(target, list):
        target[int(last)] = value
    elif value is _DELETE:
        del target[last]
    else:
        target[last] = value
    return obj


_DELETE = object()

RULE = "spec.rules.0"
PATH = f"{RULE}.http.paths.0"


@pytest.mark.parametrize(("plural", "path", "value", "message"), [
    pytest.param("ingresses", "spec", {}, "spec: Invalid value: []: either `defaultBackend` or `rules` must be "
                 "specified", id="ingress-needs-rules-or-backend"),
    pytest.param("ingresses", f"{RULE}.host", "10.0.0.1", 'spec.rules[0].host: Invalid value: "10.0.0.1": must be a '
                 "DNS name, not an IP address", id="ingress-host-ip"),
    pytest.param("ingresses", f"{PATH}.pathType", _DELETE, "spec.rules[0].http.paths[0].pathType: Required value: "
                 "pathType must be specified", id="ingress-pathtype-required"),
    pytest.param("ingresses", f"{PATH}.pathType", "Regex", 'spec.rules[0].http.paths[0].pathType: Unsupported value: '
                 '"Regex": supported values: "Exact", "ImplementationSpecific", "Prefix"', id="ingress-pathtype"),
    pytest.param("ingresses", f"{PATH}.path", "api", 'spec.rules[0].http.paths[0].path: Invalid value: "api": must be '
                 "an absolute path", id="ingress-relative-path"),
    pytest.param("ingresses", f"{PATH}.path", "/a//b", "spec.rules[0].http.paths[0].path: Invalid value: \"/a//b\": "
                 "must not contain '//'", id="ingress-path-sequence"),
    pytest.param("ingresses", f"{PATH}.backend", {"service": {"name": "api", "port": {}}},
                 "spec.rules[0].http.paths[0].backend.service.port: Required value: port name or number is required",
                 id="ingress-backend-port"),
    pytest.param("ingresses", f"{RULE}.http.paths", [], "spec.rules[0].http.paths: Required value",
                 id="ingress-paths-required"),
    pytest.param("ingressclasses", "spec.controller", "nginx", 'spec.controller: Invalid value: "nginx": must be a '
                 'domain-prefixed path (such as "acme.io/foo")', id="ingressclass-controller"),
    pytest.param("networkpolicies", "spec.ingress.0.ports.0.endPort", 5000, "spec.ingress[0].ports[0].endPort: "
                 "Invalid value: 5000: must be greater than or equal to `port`", id="netpol-endport"),
    pytest.param("networkpolicies", "spec.ingress.0.from.0.ipBlock.except", ["192.168.0.0/16"],
                 'spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "192.168.0.0/16": must be a strict '
                 "subset of `cidr`", id="netpol-except"),
    pytest.param("networkpolicies", "spec.ingress.0.from.1", {}, "spec.ingress[0].from[1]: Required value: must "
                 "specify a peer", id="netpol-empty-peer"),
    pytest.param("volumeattachments", "spec.source", {}, "spec.source: Invalid value: {}: must specify exactly one "
                 "of inlineVolumeSpec and persistentVolumeName", id="va-source"),
    pytest.param("csinodes", "spec.drivers.0.nodeID", "", "spec.drivers[0].nodeID: Required value",
                 id="csinode-nodeid"),
    pytest.param("certificatesigningrequests", "spec.request", "bm90IGEgcGVt", 'spec.request: Invalid value: '
                 '"<request>": PEM block type must be CERTIFICATE REQUEST', id="csr-request"),
    pytest.param("certificatesigningrequests", "spec.signerName", _DELETE, "spec.signerName: Required value",
                 id="csr-signer-required"),
    pytest.param("certificatesigningrequests", "spec.usages", ["flying"], 'spec.usages[0]: Unsupported value: '
                 '"flying": supported values: "any", "cert sign", "client auth", "code signing", "content commitment", '
                 '"crl sign", "data encipherment", "decipher only", "digital signature", "email protection", '
                 '"encipher only", "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement", '
                 '"key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", '
                 '"signing", "timestamping"', id="csr-usage"),
    pytest.param("certificatesigningrequests", "spec.expirationSeconds", 60, "spec.expirationSeconds: Invalid value: "
                 "60: may not specify a duration less than 600 seconds (10 minutes)", id="csr-expiration"),
    pytest.param("runtimeclasses", "handler", "Run.SC", 'handler: Invalid value: "Run.SC": a lowercase RFC 1123 label '
                 "must consist of lower case alphanumeric characters or '-', and must start and end with an "
                 "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')", id="runtimeclass-handler"),
    pytest.param("validatingwebhookconfigurations", "webhooks.0.name", "check", 'webhooks[0].name: Invalid value: '
                 '"check": should be a domain with at least three segments separated by dots',
                 id="webhook-name"),
    pytest.param("validatingwebhookconfigurations", "webhooks.0.sideEffects", "Unknown", 'webhooks[0].sideEffects: '
                 'Unsupported value: "Unknown": supported values: "None", "NoneOnDryRun"', id="webhook-sideeffects"),
    pytest.param("validatingwebhookconfigurations", "webhooks.0.timeoutSeconds", 31, "webhooks[0].timeoutSeconds: "
                 "Invalid value: 31: the timeout value must be between 1 and 30 seconds", id="webhook-timeout"),
    pytest.param("mutatingwebhookconfigurations", "webhooks.0.clientConfig", {}, "webhooks[0].clientConfig: Required "
                 "value: exactly one of url or service is required", id="webhook-client"),
    pytest.param("apiservices", "spec.version", "v1", 'metadata.name: Invalid value: "v1beta1.custom.example.com": '
                 'must be `spec.version+"."+spec.group`', id="apiservice-name"),
    pytest.param("apiservices", "spec.versionPriority", 0, "spec.versionPriority: Invalid value: 0: must be positive "
                 "and less than 1000", id="apiservice-priority"),
    pytest.param("services", "spec.externalIPs", ["1.2.3.004"], 'spec.externalIPs[0]: Invalid value: "1.2.3.004": '
                 "must not have leading 0s", id="externalip-leading-zero"),
    pytest.param("services", "spec.externalIPs", ["not-an-ip"], 'spec.externalIPs[0]: Invalid value: "not-an-ip": '
                 "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)", id="externalip-garbage"),
    pytest.param("services", "spec.externalIPs", ["127.0.0.1"], 'spec.externalIPs[0]: Invalid value: "127.0.0.1": '
                 "may not be in the loopback range (127.0.0.0/8, ::1/128)", id="externalip-loopback"),
    pytest.param("services", "spec.externalIPs", ["::ffff:1.2.3.4"], 'spec.externalIPs[0]: Invalid value: '
                 '"::ffff:1.2.3.4": must not be an IPv4-mapped IPv6 address', id="externalip-mapped"),
])
def test_upstream_messages(plural: str, path: str, value: Any, message: str) -> None:
    assert message in _errors(plural, _with(plural, path, value))


def test_immutable_fields_on_update() -> None:
    ingress_class = VALID["ingressclasses"]
    assert _errors("ingressclasses", _with("ingressclasses", "spec.controller", "example.com/other"),
                   ingress_class) == ['spec.controller: Invalid value: "example.com/other": field is immutable']
    runtime_class = VALID["runtimeclasses"]
    assert _errors("runtimeclasses", _with("runtimeclasses", "handler", "kata"), runtime_class) == [
        'handler: Invalid value: "kata": field is immutable']
    attachment = VALID["volumeattachments"]
    moved = _with("volumeattachments", "spec.nodeName", "node-2")
    assert [m.split(":")[0] for m in _errors("volumeattachments", moved, attachment)] == ["spec"]


def test_leading_zeros_stay_valid_on_update_of_an_old_object_only() -> None:
    old = _with("services", "spec.externalIPs", ["1.2.3.004"])
    assert _errors("services", old, old) == []  # written before the rule: may still be updated
    grown = _with("services", "spec.externalIPs", ["1.2.3.004", "5.6.7.08"])
    assert _errors("services", grown, old) == ['spec.externalIPs[1]: Invalid value: "5.6.7.08": must not have '
                                               "leading 0s"]
    status_old = {**VALID["services"], "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.010"}]}}}
    assert _errors("services", status_old, status_old) == []
    assert _errors("services", status_old) == ['status.loadBalancer.ingress[0].ip: Invalid value: "10.0.0.010": must '
                                               "not have leading 0s"]


def test_csr_conditions() -> None:
    both = {**VALID["certificatesigningrequests"], "status": {"conditions": [{"type": "Approved"}, {"type": "Denied"}]}}
    assert 'status.conditions: Invalid value: "": Approved and Denied conditions are mutually exclusive' in \
        _errors("certificatesigningrequests", both)
    twice = {**VALID["certificatesigningrequests"], "status": {"conditions": [{"type": "Approved"},
                                                                             {"type": "Approved"}]}}
    assert 'status.conditions[1].type: Duplicate value: "Approved"' in _errors("certificatesigningrequests", twice)


@pytest.mark.parametrize(("plural", "obj", "expected"), [
    pytest.param("csidrivers", {"spec": {}}, {"spec": {
        "attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": False, "seLinuxMount": False,
        "volumeLifecycleModes": ["Persistent"]}}, id="csidriver"),
    pytest.param("networkpolicies", {"spec": {"egress": [{"ports": [{"port": 53}]}]}}, {"spec": {
        "podSelector": {}, "egress": [{"ports": [{"port": 53, "protocol": "TCP"}]}],
        "policyTypes": ["Ingress", "Egress"]}}, id="netpol"),
    pytest.param("ingressclasses", {"spec": {"controller": "x.io/c", "parameters": {"kind": "K", "name": "n"}}},
                 {"spec": {"controller": "x.io/c", "parameters": {"kind": "K", "name": "n", "scope": "Cluster"}}},
                 id="ingressclass"),
    pytest.param("validatingwebhookconfigurations", {"webhooks": [{"name": "a.b.c", "rules": [{}],
                                                                   "clientConfig": {"service": {"name": "s"}}}]},
                 {"webhooks": [{"name": "a.b.c", "rules": [{"scope": "*"}],
                                "clientConfig": {"service": {"name": "s", "port": 443}}, "failurePolicy": "Fail",
                                "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                                "timeoutSeconds": 10}]}, id="webhook"),
    pytest.param("certificatesigningrequests", {"status": {"conditions": [{"type": "Approved"}]}},
                 {"status": {"conditions": [{"type": "Approved", "status": "True"}]}}, id="csr-condition"),
])
def test_defaults(plural: str, obj: Obj, expected: Obj) -> None:
    apply_defaults(plural, obj)
    assert obj == expected
