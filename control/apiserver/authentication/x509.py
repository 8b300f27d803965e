"""Who a client certificate is (upstream: k8s.io/apiserver/pkg/authentication/request/x509, CommonNameUserConversion).

A client that presents a certificate signed by the cluster CA is the user its subject's CommonName names,
in the groups its Organization entries name (in order); a certificate without a CommonName authenticates
nobody. As upstream, the certificate must be valid now and usable for clients: OpenSSL's handshake checks the
"ssl_client" purpose (clientAuth extended key usage, or none at all), so a serving-only certificate is refused.

Where the check happens: the API server's TLS context asks for a client certificate but does not require one
(CERT_OPTIONAL, `client_context`) and verifies the chain against the cluster CA during the handshake. Python's
TLS stack cannot ask for a certificate without verifying it, so two departures from upstream's 401:
- a certificate from another CA (or a forged one) fails the TLS handshake; the client sees a TLS alert
  ("unknown ca"/"bad certificate") instead of a 401 Status;
- validity in time is not checked by the handshake (the context sets OpenSSL's X509_V_FLAG_NO_CHECK_TIME)
  but here, so an expired or not-yet-valid certificate gets upstream's 401 and the server logs why.

`user_from_peercert` is pure (the dict `ssl.SSLSocket.getpeercert()` gives for a verified certificate).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping
from typing import Any

from control.apiserver.authentication.tokens import UserInfo

log = logging.getLogger(__name__)

# OpenSSL's X509_V_FLAG_NO_CHECK_TIME (x509_vfy.h): the handshake leaves validity in time to `user_from_peercert`.
NO_CHECK_TIME = 0x200000


class CertificateRejected(ValueError):
    """A verified certificate that still authenticates nobody (expired, no CommonName, not for clients)."""


def client_context(context: ssl.SSLContext, ca_path: str) -> ssl.SSLContext:
    """`context` (a server context) asking clients for an optional certificate chaining to `ca_path`."""
    context.load_verify_locations(cafile=ca_path)
    context.verify_mode = ssl.CERT_OPTIONAL
    context.verify_flags = ssl.VerifyFlags(int(context.verify_flags) | NO_CHECK_TIME)
    return context


def _attributes(name: Any, key: str) -> list[str]:
    """Every value of attribute `key` in a getpeercert() name: a tuple of RDNs, each a tuple of (key, value)."""
    if not isinstance(name, (tuple, list)):
        return []
    return [value for rdn in name if isinstance(rdn, (tuple, list))
            for pair in rdn if isinstance(pair, (tuple, list)) and len(pair) == 2
            for attr, value in [pair] if attr == key and isinstance(value, str)]


def user_from_peercert(peercert: Mapping[str, Any] | None, *, now: float) -> UserInfo | None:
    """The user of a verified peer certificate (None: the client sent none); CertificateRejected when the
    certificate is outside its validity period or names no user."""
    if not peercert:
        return None
    try:
        not_before = ssl.cert_time_to_seconds(str(peercert.get("notBefore", "")))
        not_after = ssl.cert_time_to_seconds(str(peercert.get("notAfter", "")))
    except ValueError:
        raise CertificateRejected("the certificate's validity period cannot be read") from None
    if now < not_before:
        raise CertificateRejected("x509: certificate has expired or is not yet valid: not valid before "
                                  f"{peercert.get('notBefore')}")
    if now > not_after:
        raise CertificateRejected("x509: certificate has expired or is not yet valid: expired "
                                  f"{peercert.get('notAfter')}")
    subject = peercert.get("subject")
    names = _attributes(subject, "commonName")
    if not names or not names[0]:
        raise CertificateRejected("the certificate's subject has no common name")
    return UserInfo(names[0], groups=tuple(_attributes(subject, "organizationName")))


def authenticate_transport(ssl_object: ssl.SSLObject | ssl.SSLSocket | None, *, now: float) -> UserInfo | None:
    """The user of the connection's client certificate, or None (no TLS, no certificate, or rejected — logged)."""
    if ssl_object is None:
        return None
    try:
        return user_from_peercert(ssl_object.getpeercert(), now=now)
    except CertificateRejected as exc:
        log.info("client certificate refused: %s", exc)
        return None
