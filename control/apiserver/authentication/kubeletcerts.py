"""Kubelet serving certificates signed by the cluster CA over the node's join channel (k3s's
`/v1-k3s/serving-kubelet.crt`, pkg/server/router.go servingKubeletCert; the certificate upstream's
kubelet gets from the `kubernetes.io/kubelet-serving` signer: CN `system:node:<name>`, O `system:nodes`,
serverAuth, subjectAltNames the node's names and addresses).

`POST /v1-slimkube/serving-kubelet-certificate` with a bearer token the server knows and a JSON body
`{"nodeName": …, "addresses": [IP, …], "hostnames": [name, …], "csr": "<PEM CSR>"}` answers 201
`{"certificate": "<PEM>"}`. The kubelet keeps its private key (only the CSR travels, unlike k3s, which sends the key);
the server takes nothing from the CSR but its public key: subject and extensions are decided here from
the validated fields, so a CSR asking for `system:masters` or clientAuth gets neither.

Why not the CertificateSigningRequest API: upstream's kubelet-serving CSRs are not auto-approved (an
operator or a third-party approver must approve each), and it needs the CSR resource, the approver and
the signer controller; the join channel already authenticates the node with the node token, which is the
trust `slimkube agent` has today. Departure, said in docs/kubelet.md: any holder of the node token can get a
serving certificate for any node name (as it can register any Node); there are no per-node credentials yet.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from control.apiserver import status

PATH = "/v1-slimkube/serving-kubelet-certificate"
MAX_NAMES = 32
_DNS = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*")
SERVING_USAGES = ("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                  "extendedKeyUsage=serverAuth\n")


@dataclass(frozen=True)
class ServingRequest:
    node_name: str
    alt_names: tuple[str, ...]  # openssl form: DNS:…, IP:…
    csr_pem: bytes

    @property
    def subject(self) -> str:
        return f"/O=system:nodes/CN=system:node:{self.node_name}"

    @property
    def extensions(self) -> str:
        return SERVING_USAGES + f"subjectAltName={','.join(self.alt_names)}\n"


def _strings(body: dict[str, Any], name: str) -> list[str]:
    value = body.get(name) or []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise status.bad_request(f"{name}: expected a list of strings")
    return value


def parse(body: Any) -> ServingRequest:
    """The request, or 400 naming what is wrong; the node name is always one of the DNS names."""
    if not isinstance(body, dict):
        raise status.bad_request("expected a JSON object with nodeName, addresses, hostnames and csr")
    node_name = body.get("nodeName")
    if not isinstance(node_name, str) or len(node_name) > 253 or not _DNS.fullmatch(node_name):
        raise status.bad_request(f"nodeName: {node_name!r} is not a valid DNS-1123 subdomain")
    csr = body.get("csr")
    if not isinstance(csr, str) or "BEGIN CERTIFICATE REQUEST" not in csr:
        raise status.bad_request("csr: expected a PEM certificate request")
    names = [f"DNS:{node_name}"]
    for hostname in _strings(body, "hostnames"):
        if len(hostname) > 253 or not _DNS.fullmatch(hostname):
            raise status.bad_request(f"hostnames: {hostname!r} is not a valid DNS name")
        names.append(f"DNS:{hostname}")
    for text in _strings(body, "addresses"):
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            raise status.bad_request(f"addresses: {text!r} is not an IP address") from None
        if address.is_unspecified or address.is_multicast:
            raise status.bad_request(f"addresses: {text} cannot name a kubelet")
        names.append(f"IP:{address}")
    unique = tuple(dict.fromkeys(names))
    if len(unique) > MAX_NAMES:
        raise status.bad_request(f"at most {MAX_NAMES} names and addresses")
    return ServingRequest(node_name=node_name, alt_names=unique, csr_pem=csr.encode())
