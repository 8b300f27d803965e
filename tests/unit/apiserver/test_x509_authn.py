"""The user of a verified client certificate: CN the name, O the groups, validity in time checked here
(control/apiserver/authentication/x509.py)."""

from __future__ import annotations

import ssl

import pytest

from control.apiserver.authentication import x509
from control.apiserver.authentication.tokens import UserInfo

NOW = ssl.cert_time_to_seconds("Jun  1 00:00:00 2027 GMT")


def peercert(*rdns: tuple[str, str], before: str = "Jan  1 00:00:00 2027 GMT",
             after: str = "Jan  1 00:00:00 2028 GMT") -> dict:
    return {"subject": tuple(((key, value),) for key, value in rdns), "notBefore": before, "notAfter": after}


@pytest.mark.parametrize(("cert", "user"), [
    (None, None),
    ({}, None),
    (peercert(("organizationName", "system:nodes"), ("commonName", "system:node:a")),
     UserInfo("system:node:a", groups=("system:nodes",))),
    (peercert(("commonName", "alice"), ("organizationName", "b"), ("organizationName", "a")),
     UserInfo("alice", groups=("b", "a"))),
    (peercert(("countryName", "DE"), ("commonName", "bob")), UserInfo("bob")),
])
def test_subject_to_user(cert, user):
    assert x509.user_from_peercert(cert, now=NOW) == user


@pytest.mark.parametrize("cert", [
    peercert(("commonName", "late"), before="Jan  1 00:00:00 2026 GMT", after="Jan  1 00:00:00 2027 GMT"),
    peercert(("commonName", "early"), before="Jan  1 00:00:00 2028 GMT", after="Jan  1 00:00:00 2029 GMT"),
    peercert(("organizationName", "system:masters")),
    peercert(("commonName", "")),
    {"subject": ((("commonName", "x"),),), "notBefore": "garbage", "notAfter": "garbage"},
], ids=["expired", "not-yet-valid", "no-cn", "empty-cn", "unreadable-dates"])
def test_certificates_that_authenticate_nobody(cert):
    with pytest.raises(x509.CertificateRejected):
        x509.user_from_peercert(cert, now=NOW)
