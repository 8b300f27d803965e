"""The certificate controllers' decisions: upstream's subject/usage checks per signer, the kubelet-client
approver with node passwords, the kubelet-serving approver, what gets signed and for how long
(control/controllers/certificates/checks.py, decisions.py, nodepassword.py, request.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from control.controllers.certificates import checks, decisions, nodepassword
from control.controllers.certificates.decisions import Verdict
from control.controllers.certificates.request import ParsedRequest, parse_subject, parse_text

CLIENT = ["digital signature", "client auth"]
SERVING = ["digital signature", "key encipherment", "server auth"]
NODE_A = ParsedRequest("system:node:a", ("system:nodes",), public_key_sha256="k1")
NODES = ("system:nodes",)


def csr(signer: str, usages: list[str], *, username: str = "system:node:a", groups: tuple[str, ...] = ("system:nodes",),
        conditions: list[dict] | None = None, certificate: str = "", seconds: int | None = None) -> dict:
    spec = {"signerName": signer, "usages": usages, "username": username, "groups": list(groups), "request": "x"}
    if seconds is not None:
        spec["expirationSeconds"] = seconds
    status: dict = {"conditions": conditions or []}
    if certificate:
        status["certificate"] = certificate
    return {"metadata": {"name": "c"}, "spec": spec, "status": status}


@pytest.mark.parametrize(("request_", "usages", "error"), [
    (NODE_A, CLIENT, None),
    (NODE_A, ["digital signature", "key encipherment", "client auth"], None),
    (NODE_A, ["client auth"], "usages did not match [client auth digital signature key encipherment]"),
    (NODE_A, [*CLIENT, "server auth"], "usages did not match [client auth digital signature key encipherment]"),
    (ParsedRequest("system:node:a", ("system:masters",)), CLIENT, "subject organization is not system:nodes"),
    (ParsedRequest("system:node:a", ("system:nodes", "x")), CLIENT, "subject organization is not system:nodes"),
    (ParsedRequest("alice", ("system:nodes",)), CLIENT, "subject common name does not begin with system:node:"),
    (ParsedRequest("system:node:a", NODES, dns_names=("a",)), CLIENT, "DNS subjectAltNames are not allowed"),
    (ParsedRequest("system:node:a", ("system:nodes",), ip_addresses=("1.2.3.4",)), CLIENT,
     "IP subjectAltNames are not allowed"),
    (ParsedRequest("system:node:a", NODES, emails=("a@b",)), CLIENT, "Email subjectAltNames are not allowed"),
    (ParsedRequest("system:node:a", ("system:nodes",), uris=("spiffe://a",)), CLIENT,
     "URI subjectAltNames are not allowed"),
])
def test_kubelet_client_checks(request_, usages, error):
    assert checks.kubelet_client_error(request_, usages) == error


@pytest.mark.parametrize(("request_", "usages", "error"), [
    (ParsedRequest("system:node:a", NODES, dns_names=("a",)), SERVING, None),
    (ParsedRequest("system:node:a", NODES, ip_addresses=("10.0.0.2",)), ["digital signature", "server auth"],
     None),
    (NODE_A, SERVING, "DNS or IP subjectAltName is required"),
    (ParsedRequest("system:node:a", NODES, dns_names=("a",)), CLIENT,
     "usages did not match [digital signature key encipherment server auth]"),
    (ParsedRequest("a", ("system:nodes",), dns_names=("a",)), SERVING,
     "subject common name does not begin with system:node:"),
])
def test_kubelet_serving_checks(request_, usages, error):
    assert checks.kubelet_serving_error(request_, usages) == error


@pytest.mark.parametrize(("usages", "error"), [
    (["client auth"], None),
    (["digital signature", "key encipherment", "client auth"], None),
    (["digital signature"], "missing required usage for client certificate: client auth"),
    (["client auth", "server auth"], "invalid usage for client certificate: server auth"),
    (["client auth", "cert sign"], "invalid usage for client certificate: cert sign"),
])
def test_apiserver_client_usages(usages, error):
    assert checks.apiserver_client_error(ParsedRequest("alice", ("team",)), usages) == error


APPROVED = [{"type": "Approved", "status": "True"}]


@pytest.mark.parametrize(("obj", "sign"), [
    (csr(checks.KUBELET_CLIENT, CLIENT, conditions=APPROVED), True),
    (csr(checks.KUBE_APISERVER_CLIENT, CLIENT, conditions=APPROVED), True),
    (csr(checks.KUBELET_CLIENT, CLIENT), False),
    (csr(checks.KUBELET_CLIENT, CLIENT, conditions=[*APPROVED, {"type": "Failed", "status": "True"}]), False),
    (csr(checks.KUBELET_CLIENT, CLIENT, conditions=[{"type": "Denied", "status": "True"}]), False),
    (csr(checks.KUBELET_CLIENT, CLIENT, conditions=APPROVED, certificate="Y2VydA=="), False),
    (csr("example.com/other", CLIENT, conditions=APPROVED), False),
    (csr("kubernetes.io/legacy-unknown", CLIENT, conditions=APPROVED), False),
])
def test_what_gets_signed(obj, sign):
    assert decisions.should_sign(obj) is sign


@pytest.mark.parametrize(("seconds", "expected"), [
    (None, timedelta(days=365)), (3600, timedelta(hours=1)), (60, timedelta(minutes=10)),
    (10 * 365 * 86400, timedelta(days=365)),
])
def test_duration_is_one_year_or_the_shorter_request(seconds, expected):
    assert decisions.duration(csr(checks.KUBELET_CLIENT, CLIENT, seconds=seconds)) == expected


def test_recognisers_selfnodeclient_only_for_the_requesters_own_name():
    assert decisions.client_recognisers(csr(checks.KUBELET_CLIENT, CLIENT), NODE_A) == ["selfnodeclient", "nodeclient"]
    joiner = csr(checks.KUBELET_CLIENT, CLIENT, username="system:bootstrap:join", groups=("system:bootstrappers",))
    assert decisions.client_recognisers(joiner, NODE_A) == ["nodeclient"]
    other = csr(checks.KUBELET_CLIENT, CLIENT, username="system:node:b")
    assert decisions.client_recognisers(other, NODE_A) == ["nodeclient"]
    assert decisions.client_recognisers(csr(checks.KUBELET_CLIENT, ["client auth"]), NODE_A) == []
    assert decisions.client_recognisers(csr(checks.KUBELET_SERVING, CLIENT), NODE_A) == []


@pytest.mark.parametrize(("recogniser", "allowed", "recorded", "verdict", "record"), [
    ("selfnodeclient", True, None, Verdict.APPROVE, False),
    ("selfnodeclient", False, None, Verdict.LEAVE, False),
    ("nodeclient", False, None, Verdict.LEAVE, False),
    ("nodeclient", True, None, Verdict.APPROVE, True),  # first join of the name: recorded
    ("nodeclient", True, "k1", Verdict.APPROVE, False),  # the same node password
    ("nodeclient", True, "k2", Verdict.DENY, False),  # another joiner claiming the name
    ("nodeclient", True, "", Verdict.DENY, False),  # a damaged record refuses
    ("nodeclient", False, "k2", Verdict.LEAVE, False),
])
def test_kubelet_client_approver(recogniser, allowed, recorded, verdict, record):
    decision = decisions.kubelet_client(recogniser, allowed, NODE_A, recorded)
    assert (decision.verdict, decision.record_key) == (verdict, record)
    if verdict is Verdict.DENY:
        assert decision.reason == "NodePasswordMismatch"
    if verdict is Verdict.APPROVE:
        assert decision.message.startswith("Auto approving") and decision.reason == "AutoApproved"


NODE = {"metadata": {"name": "a"}, "status": {"addresses": [
    {"type": "InternalIP", "address": "10.0.0.2"}, {"type": "Hostname", "address": "a"},
    {"type": "ExternalDNS", "address": "a.example.com"}]}}


def serving(*, dns: tuple[str, ...] = ("a",), ips: tuple[str, ...] = ("10.0.0.2",)) -> ParsedRequest:
    return ParsedRequest("system:node:a", NODES, dns_names=dns, ip_addresses=ips)


@pytest.mark.parametrize(("request_", "obj", "node", "verdict"), [
    (serving(), csr(checks.KUBELET_SERVING, SERVING), NODE, Verdict.APPROVE),
    (serving(dns=("a", "a.example.com")), csr(checks.KUBELET_SERVING, SERVING), NODE, Verdict.APPROVE),
    (serving(dns=("kubernetes.default.svc",)), csr(checks.KUBELET_SERVING, SERVING), NODE, Verdict.DENY),
    (serving(dns=("kubernetes",)), csr(checks.KUBELET_SERVING, SERVING), NODE, Verdict.DENY),
    (serving(dns=("web.default.svc.cluster.local",)), csr(checks.KUBELET_SERVING, SERVING), NODE, Verdict.DENY),
    (serving(dns=("localhost",)), csr(checks.KUBELET_SERVING, SERVING), NODE, Verdict.DENY),
    (serving(ips=("127.0.0.1",)), csr(checks.KUBELET_SERVING, SERVING), NODE, Verdict.DENY),
    (serving(ips=("::1",)), csr(checks.KUBELET_SERVING, SERVING), NODE, Verdict.DENY),
    (serving(ips=("10.96.0.1",)), csr(checks.KUBELET_SERVING, SERVING), NODE, Verdict.DENY),  # the API server's
    (serving(ips=("10.0.0.3",)), csr(checks.KUBELET_SERVING, SERVING), NODE, Verdict.DENY),  # not the node's
    (serving(dns=("b",)), csr(checks.KUBELET_SERVING, SERVING), NODE, Verdict.DENY),
    (serving(), csr(checks.KUBELET_SERVING, SERVING, username="system:node:b"), NODE, Verdict.DENY),
    (serving(), csr(checks.KUBELET_SERVING, SERVING, username="system:bootstrap:x", groups=("system:bootstrappers",)),
     NODE, Verdict.DENY),
    (serving(), csr(checks.KUBELET_SERVING, CLIENT), NODE, Verdict.DENY),
    (serving(), csr(checks.KUBELET_SERVING, SERVING), None, Verdict.LEAVE),  # the Node is not there yet
    (serving(), csr(checks.KUBELET_SERVING, SERVING), {"metadata": {"name": "a"}}, Verdict.LEAVE),
    (serving(), csr(checks.KUBELET_CLIENT, SERVING), NODE, Verdict.LEAVE),
])
def test_kubelet_serving_approver(request_, obj, node, verdict):
    decision = decisions.kubelet_serving(obj, request_, node, apiserver_ips={"10.96.0.1", "192.168.1.5"})
    assert decision.verdict is verdict, decision


def test_node_password_secret_round_trip():
    secret = nodepassword.secret("worker-1", "ab" * 32)
    assert secret["metadata"] == {"name": "worker-1.node-password.slimkube", "namespace": "kube-system"}
    assert nodepassword.recorded(secret) == "ab" * 32
    assert nodepassword.recorded(None) is None
    assert nodepassword.recorded({"data": {"hash": "not base64!"}}) == ""


def test_subject_parsing_unescapes_and_keeps_certificate_order():
    assert parse_subject(r"CN=system:node:a\, b,O=b,O=a") == ("system:node:a, b", ("a", "b"))
    text = ("        Subject: CN=system:node:x,O=system:nodes\n            Public Key Algorithm: rsaEncryption\n"
            "                X509v3 Subject Alternative Name: \n"
            "                    DNS:x, IP Address:0:0:0:0:0:0:0:1, email:e@x, URI:spiffe://x\n")
    parsed = parse_text(text)
    assert parsed == ParsedRequest("system:node:x", ("system:nodes",), ("x",), ("::1",), ("e@x",), ("spiffe://x",),
                                   rsa=True)
