"""Validation of certificates.k8s.io/v1 CertificateSigningRequests.

Upstream: pkg/apis/certificates/validation/validation.go (ValidateCertificateSigningRequestCreate/Update,
validateCSR, validateConditions, validateCertificate; the v1 rules: `signerName` and `usages` required).
 The request must be a PEM block of type CERTIFICATE REQUEST whose
DER decodes; its self-signature is not checked here (upstream parses it with crypto/x509).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from control.api.validation.primitives import Check, Validator
from control.apimachinery.validation import FieldError, is_dns1123_subdomain

# upstream certificates.KeyUsage values (v1), sorted as NotSupported lists them
KEY_USAGES = ("any", "cert sign", "client auth", "code signing", "content commitment", "crl sign",
              "data encipherment", "decipher only", "digital signature", "email protection", "encipher only",
              "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement", "key encipherment",
              "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing", "timestamping")
CONDITION_TYPES = ("Approved", "Denied", "Failed")
MIN_EXPIRATION_SECONDS = 600
_PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.S)


def pem_blocks(data: str) -> list[tuple[str, bytes]]:
    """The (type, DER) of every PEM block in `data`; a block whose body is not base64 is skipped."""
    blocks = []
    for match in _PEM.finditer(data):
        body = "".join(line for line in match.group(2).splitlines() if ":" not in line)
        try:
            blocks.append((match.group(1), base64.b64decode(body, validate=False)))
        except (binascii.Error, ValueError):
            continue
    return blocks


def _request_errors(request: str) -> list[str]:
    """upstream validateCSR → ParseCSR: `base64 data` of the request, decoded, one CERTIFICATE REQUEST."""
    try:
        pem = base64.b64decode(request, validate=True).decode("ascii")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return ["PEM block type must be CERTIFICATE REQUEST"]
    blocks = pem_blocks(pem)
    if not blocks or blocks[0][0] != "CERTIFICATE REQUEST" or not blocks[0][1]:
        return ["PEM block type must be CERTIFICATE REQUEST"]
    return []


def _signer_name_errors(name: str) -> list[str]:
    """upstream ValidateSignerName: `<domain>/<path>`, the domain a DNS subdomain."""
    domain, slash, path = name.partition("/")
    if not slash:
        return ["must be a fully qualified domain and path of the form 'example.com/signer-name'"]
    if not path:
        return ["validating path: path may not be empty"]
    errors = [f"validating domain: {message}" for message in is_dns1123_subdomain(domain)]
    if "." not in domain:
        errors.append("should be a domain with at least two segments separated by dots")
    return errors


def _conditions(c: Check, status: Mapping[str, Any]) -> None:
    seen: set[str] = set()
    for path, condition in c.items(status, "conditions", "status.conditions"):
        kind = c.text(condition, "type", f"{path}.type")
        state = c.text(condition, "status", f"{path}.status")
        if kind == "":
            c.add([FieldError.required(f"{path}.type")])
        if state == "":
            c.add([FieldError.required(f"{path}.status")])
        if kind in CONDITION_TYPES:
            if kind in seen:
                c.add([FieldError.duplicate(f"{path}.type", kind)])
            seen.add(kind)
            if kind in ("Approved", "Denied") and state and state != "True":
                c.add([FieldError.not_supported(f"{path}.status", state, ["True"])])
    if {"Approved", "Denied"} <= seen:
        c.add([FieldError.invalid("status.conditions", "", "Approved and Denied conditions are mutually exclusive")])


def _csr(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := c.obj(obj, "spec", "spec")) is not None:
        request = c.text(spec, "request", "spec.request")
        if request == "":
            c.add([FieldError.required("spec.request")])
        elif request is not None and old is None:
            c.invalid("spec.request", "<request>", _request_errors(request))
        signer = c.text(spec, "signerName", "spec.signerName")
        if signer == "":
            c.add([FieldError.required("spec.signerName")])
        elif signer:
            c.invalid("spec.signerName", signer, _signer_name_errors(signer))
        usages = c.texts(spec, "usages", "spec.usages")
        if not usages and spec.get("usages") is None:
            c.add([FieldError.required("spec.usages")])
        seen: set[str] = set()
        for index, usage in enumerate(usages):
            if usage not in KEY_USAGES:
                c.add([FieldError.not_supported(f"spec.usages[{index}]", usage, KEY_USAGES)])
            elif usage in seen:
                c.add([FieldError.duplicate(f"spec.usages[{index}]", usage)])
            seen.add(usage)
        seconds = c.integer(spec, "expirationSeconds", "spec.expirationSeconds")
        if seconds is not None and seconds < MIN_EXPIRATION_SECONDS:
            c.add([FieldError.invalid("spec.expirationSeconds", seconds,
                                      "may not specify a duration less than 600 seconds (10 minutes)")])
    if (status := c.obj(obj, "status", "status")) is not None:
        _conditions(c, status)
        certificate = c.text(status, "certificate", "status.certificate")
        if certificate:
            try:
                pem = base64.b64decode(certificate, validate=True).decode("ascii")
            except (binascii.Error, ValueError, UnicodeDecodeError):
                pem = ""
            blocks = pem_blocks(pem)
            if not blocks or any(kind != "CERTIFICATE" for kind, _ in blocks):
                c.add([FieldError.invalid("status.certificate", "<certificate data>",
                                          "must contain at least one CERTIFICATE PEM block")])


VALIDATORS: dict[str, Validator] = {
    "certificatesigningrequests": _csr,
}
