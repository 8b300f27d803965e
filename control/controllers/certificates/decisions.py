"""What the certificate controllers decide about one CertificateSigningRequest, apart from any I/O.

- `should_sign`: upstream csrsigning's filter (approved, not denied or failed, no certificate yet, a signer
  this controller issues for) and the certificate's lifetime (upstream duration: the signer's one year, or
  the request's `expirationSeconds` when shorter, never under ten minutes).
- `kubelet_client`: upstream csrapproving (pkg/controller/certificates/approver/sarapprove.go): a request
  for the kubelet-client signer that passes ValidateKubeletClientCSR is approved when its requester may
  `create` `certificatesigningrequests/selfnodeclient` and asks for its own name (a renewal: the requester
  is already `system:node:<name>`), or may create `certificatesigningrequests/nodeclient` (the join
  token's group may) — plus k3s's node passwords for the second path: the first join of a name records
  its node key, a later join of that name is approved only with the same key (module nodepassword.py),
  and refused (Denied) otherwise. A request nobody may approve is left pending, as upstream.
- `kubelet_serving`: slimkube's own approver for the kubelet-serving signer (upstream leaves these to an
  operator or an external approver): only a node asking for itself (requester == the subject's
  `system:node:<name>`), only names its Node reports (the node name, its Hostname/InternalDNS/ExternalDNS
  addresses, its InternalIP/ExternalIP addresses), and never a service name (`kubernetes`,
  `*.svc`, `*.svc.<domain>`), `localhost`, a loopback or unspecified address, or an address of the API
  server (the `kubernetes` Service's cluster IPs and Endpoints) — those are Denied with the reason.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any

from control.controllers.certificates import checks
from control.controllers.certificates.request import ParsedRequest

DEFAULT_DURATION = timedelta(days=365)  # upstream --cluster-signing-duration 8760h
MIN_DURATION = timedelta(minutes=10)
SELF_NODE_CLIENT, NODE_CLIENT = "selfnodeclient", "nodeclient"
SELF_NODE_CLIENT_MESSAGE = "Auto approving self kubelet client certificate after SubjectAccessReview."
NODE_CLIENT_MESSAGE = "Auto approving kubelet client certificate after SubjectAccessReview."
SERVING_MESSAGE = "Auto approving kubelet serving certificate: the node's own name and addresses."
SERVICE_NAMES = frozenset({"kubernetes", "kubernetes.default", "kubernetes.default.svc"})
NAME_ADDRESS_TYPES = ("Hostname", "InternalDNS", "ExternalDNS")
IP_ADDRESS_TYPES = ("InternalIP", "ExternalIP")


def conditions(csr: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = csr.get("status")
    found = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def has_condition(csr: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status", "True") == "True" for c in conditions(csr))


def has_certificate(csr: Mapping[str, Any]) -> bool:
    status = csr.get("status")
    return isinstance(status, Mapping) and bool(status.get("certificate"))


def spec(csr: Mapping[str, Any]) -> Mapping[str, Any]:
    value = csr.get("spec")
    return value if isinstance(value, Mapping) else {}


def usages(csr: Mapping[str, Any]) -> list[str]:
    return [u for u in spec(csr).get("usages") or [] if isinstance(u, str)]


def should_sign(csr: Mapping[str, Any]) -> bool:
    """Approved, neither denied nor failed, not yet issued, and for a signer this controller issues for."""
    return (has_condition(csr, "Approved") and not has_condition(csr, "Denied") and not has_condition(csr, "Failed")
            and not has_certificate(csr) and spec(csr).get("signerName") in checks.SIGNERS)


def duration(csr: Mapping[str, Any], signer_duration: timedelta = DEFAULT_DURATION) -> timedelta:
    """upstream: min(the signer's duration, expirationSeconds), at least ten minutes."""
    seconds = spec(csr).get("expirationSeconds")
    if isinstance(seconds, int) and not isinstance(seconds, bool):
        return max(MIN_DURATION, min(signer_duration, timedelta(seconds=seconds)))
    return signer_duration


class Verdict(Enum):
    APPROVE = "approve"
    DENY = "deny"
    LEAVE = "leave"  # not ours to decide, or not yet (no permission, no Node yet)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""
    message: str = ""
    record_key: bool = False  # approve and record the node key as the name's first join


LEAVE = Decision(Verdict.LEAVE)


def undecided(csr: Mapping[str, Any]) -> bool:
    """Neither approved nor denied, and not issued (the approvers look at nothing else)."""
    return not (has_condition(csr, "Approved") or has_condition(csr, "Denied") or has_certificate(csr))


def node_name(request: ParsedRequest) -> str:
    return request.common_name.removeprefix(checks.NODE_PREFIX)


def client_recognisers(csr: Mapping[str, Any], request: ParsedRequest) -> list[str]:
    """Which upstream recognisers match, in upstream's order (selfnodeclient first)."""
    if spec(csr).get("signerName") != checks.KUBELET_CLIENT or checks.kubelet_client_error(request, usages(csr)):
        return []
    found = [NODE_CLIENT]
    if spec(csr).get("username") == request.common_name:
        found.insert(0, SELF_NODE_CLIENT)
    return found


def kubelet_client(recogniser: str, allowed: bool, request: ParsedRequest, recorded_key: str | None) -> Decision:
    """One recogniser's verdict: `allowed` is its SubjectAccessReview's answer; `recorded_key` the node key
    fingerprint recorded for the requested name (None: the name has never joined)."""
    if not allowed:
        return LEAVE
    if recogniser == SELF_NODE_CLIENT:
        return Decision(Verdict.APPROVE, "AutoApproved", SELF_NODE_CLIENT_MESSAGE)
    if recorded_key is None:
        return Decision(Verdict.APPROVE, "AutoApproved", NODE_CLIENT_MESSAGE, record_key=True)
    if recorded_key == request.public_key_sha256:
        return Decision(Verdict.APPROVE, "AutoApproved", NODE_CLIENT_MESSAGE)
    return Decision(Verdict.DENY, "NodePasswordMismatch",
                    f"node {node_name(request)!r} has already joined with another node password: a joiner without "
                    "that node's password cannot take its name")


def _is_service_name(name: str, cluster_domain: str) -> bool:
    lowered = name.lower().rstrip(".")
    return (lowered in SERVICE_NAMES or lowered.endswith(".svc") or ".svc." in lowered
            or lowered == cluster_domain or lowered.endswith("." + cluster_domain) or lowered == "localhost"
            or lowered.endswith(".localhost"))


def node_addresses(node: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """(DNS names, IP addresses) a Node reports in status.addresses."""
    status = node.get("status")
    entries = status.get("addresses") if isinstance(status, Mapping) else None
    names: set[str] = set()
    ips: set[str] = set()
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("address"), str):
            continue
        if entry.get("type") in NAME_ADDRESS_TYPES:
            names.add(entry["address"].lower())
        elif entry.get("type") in IP_ADDRESS_TYPES:
            try:
                ips.add(str(ipaddress.ip_address(entry["address"])))
            except ValueError:
                continue
    return names, ips


def kubelet_serving(csr: Mapping[str, Any], request: ParsedRequest, node: Mapping[str, Any] | None, *,
                    apiserver_ips: Collection[str], cluster_domain: str = "cluster.local") -> Decision:
    """The serving approver's verdict (module notes)."""
    if spec(csr).get("signerName") != checks.KUBELET_SERVING:
        return LEAVE
    if (error := checks.kubelet_serving_error(request, usages(csr))) is not None:
        return Decision(Verdict.DENY, "InvalidServingRequest", error)
    groups: Sequence[Any] = spec(csr).get("groups") or []
    if spec(csr).get("username") != request.common_name or checks.NODES_GROUP not in groups:
        return Decision(Verdict.DENY, "NotRequestedByTheNode",
                        f"only {request.common_name} itself may ask for its serving certificate")
    name = node_name(request)
    for dns in request.dns_names:
        if _is_service_name(dns, cluster_domain):
            return Decision(Verdict.DENY, "ForbiddenName", f"{dns} names a service or this host, not node {name}")
    for ip in request.ip_addresses:
        address = ipaddress.ip_address(ip)
        if address.is_loopback or address.is_unspecified or address.is_multicast or ip in apiserver_ips:
            return Decision(Verdict.DENY, "ForbiddenAddress", f"{ip} is not an address node {name} may serve on")
    if node is None:
        return LEAVE  # the Node is registered before the kubelet asks; wait for the informer to see it
    names, ips = node_addresses(node)
    if not ips:
        return LEAVE  # registered without status yet: wait for the kubelet's first status
    names.add(name)
    for dns in request.dns_names:
        if dns.lower() not in names:
            return Decision(Verdict.DENY, "NotTheNodesName", f"{dns} is not a name node {name} reports")
    for ip in request.ip_addresses:
        if ip not in ips:
            return Decision(Verdict.DENY, "NotTheNodesAddress", f"{ip} is not an address node {name} reports")
    return Decision(Verdict.APPROVE, "AutoApproved", SERVING_MESSAGE)
