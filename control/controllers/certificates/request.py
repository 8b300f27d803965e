"""What a CertificateSigningRequest's PKCS#10 request asks for (upstream: crypto/x509 ParseCertificateRequest
and CheckSignature, as pkg/apis/certificates ParseCSR uses them), read with the `openssl` command line tool.

The request's self-signature is checked (a request whose key did not sign it is unusable). The subject is
read in RFC 2253 form and unescaped; subjectAltNames are split into DNS names, IP addresses, emails and URIs.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import ipaddress
import re
import subprocess
from dataclasses import dataclass


class RequestError(ValueError):
    """The request cannot be parsed or its signature does not verify."""


@dataclass(frozen=True)
class ParsedRequest:
    common_name: str
    organizations: tuple[str, ...]
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()  # normalised (ipaddress) spelling
    emails: tuple[str, ...] = ()
    uris: tuple[str, ...] = ()
    rsa: bool = False  # upstream treats RSA keys apart: only they may ask for "key encipherment"
    public_key_sha256: str = ""  # hex sha256 of the DER SubjectPublicKeyInfo (the node password's proof)


_RDN_SPLIT = re.compile(r"(?<!\\)[,+]")


def _unescape(value: str) -> str:
    return re.sub(r"\\([0-9A-Fa-f]{2}|.)", lambda m: chr(int(m[1], 16)) if len(m[1]) == 2 else m[1], value)


def parse_subject(rfc2253: str) -> tuple[str, tuple[str, ...]]:
    """(first CN, every O in certificate order) of an RFC 2253 name (which lists the RDNs in reverse)."""
    pairs = []
    for part in _RDN_SPLIT.split(rfc2253):
        key, equal, value = part.strip().partition("=")
        if equal:
            pairs.append((key.strip(), _unescape(value.strip())))
    pairs.reverse()
    names = [value for key, value in pairs if key == "CN"]
    return (names[0] if names else ""), tuple(value for key, value in pairs if key == "O")


def parse_text(text: str) -> ParsedRequest:
    """A ParsedRequest from `openssl req -noout -text -nameopt RFC2253,-esc_msb` output."""
    subject = next((line.split("Subject:", 1)[1].strip() for line in text.splitlines()
                    if line.strip().startswith("Subject:")), "")
    common_name, organizations = parse_subject(subject)
    lines = text.splitlines()
    alt: list[str] = []
    for index, line in enumerate(lines):
        if "X509v3 Subject Alternative Name" in line and index + 1 < len(lines):
            alt = [item.strip() for item in lines[index + 1].split(", ") if item.strip()]
    dns, ips, emails, uris = [], [], [], []
    for item in alt:
        kind, _, value = item.partition(":")
        if kind == "DNS":
            dns.append(value)
        elif kind == "IP Address":
            ips.append(str(ipaddress.ip_address(value)))
        elif kind == "email":
            emails.append(value)
        elif kind == "URI":
            uris.append(value)
        else:
            raise RequestError(f"unsupported subjectAltName {kind}")
    return ParsedRequest(common_name, organizations, tuple(dns), tuple(ips), tuple(emails), tuple(uris),
                         rsa="rsaEncryption" in text)


def pem_of(request_b64: str) -> bytes:
    """The PEM of a CSR's `spec.request` (base64 of the PEM, as the API carries it)."""
    try:
        return base64.b64decode(request_b64, validate=True)
    except (binascii.Error, ValueError):
        raise RequestError("spec.request is not base64") from None


def parse(pem: bytes) -> ParsedRequest:
    """The request, its self-signature verified (RequestError otherwise)."""
    result = subprocess.run(["openssl", "req", "-noout", "-verify", "-text", "-nameopt", "RFC2253,-esc_msb"],
                            input=pem, capture_output=True, check=False)
    key = subprocess.run(["openssl", "req", "-noout", "-pubkey"], input=pem, capture_output=True, check=False)
    if result.returncode != 0 or key.returncode != 0:
        raise RequestError("the certificate request does not parse or its signature does not verify")
    try:
        parsed = parse_text(result.stdout.decode("utf-8", "replace"))
    except ValueError as exc:
        raise RequestError(str(exc)) from None
    return dataclasses.replace(parsed, public_key_sha256=public_key_fingerprint(key.stdout))


def public_key_fingerprint(public_key_pem: bytes) -> str:
    """sha256 hex of the DER inside a PEM PUBLIC KEY block."""
    body = b"".join(line for line in public_key_pem.splitlines() if line and not line.startswith(b"-----"))
    try:
        return hashlib.sha256(base64.b64decode(body, validate=True)).hexdigest()
    except (binascii.Error, ValueError):
        raise RequestError("the certificate request's public key cannot be read") from None

