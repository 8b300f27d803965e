"""The cluster CA issuing for an approved request (control/controllers/certificates/authority.py, request.py):
the subject and names are the request's, the usages the CSR object's (not the extensions the request asks
for), notBefore backdated five minutes, notAfter the duration or the CA's own end; a request whose
self-signature does not verify is refused."""

from __future__ import annotations

import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from control.apiserver.authentication import certs
from control.controllers.certificates import authority, request
from control.util import openssl


@pytest.fixture
def ca(tmp_path: Path) -> authority.Authority:
    served = certs.ensure_serving_certs(str(tmp_path / "server"), bind_address="127.0.0.1", service_ip="10.96.0.1")
    return authority.Authority(served.ca_path, served.ca_key_path)


def make_csr(tmp_path: Path, subject: str, *extra: str) -> bytes:
    key, csr = tmp_path / "k.key", tmp_path / "r.csr"
    openssl.run("req", "-new", *openssl.EC_KEY, "-keyout", str(key), "-out", str(csr), "-subj", subject, *extra)
    return csr.read_bytes()


def test_issue_keeps_the_subject_and_names_and_takes_the_usages_from_the_spec(ca, tmp_path: Path) -> None:
    pem = make_csr(tmp_path, "/O=system:nodes/CN=system:node:n1", "-addext", "extendedKeyUsage=clientAuth",
                   "-addext", "subjectAltName=DNS:n1,IP:10.0.0.7")
    parsed = request.parse(pem)
    assert (parsed.common_name, parsed.organizations, parsed.dns_names, parsed.ip_addresses) == (
        "system:node:n1", ("system:nodes",), ("n1",), ("10.0.0.7",))
    assert len(parsed.public_key_sha256) == 64
    now = datetime.now(UTC).replace(microsecond=0)
    issued = authority.issue(ca, pem, parsed, ["digital signature", "server auth"], now=now,
                             duration=timedelta(hours=1), ca_not_after=ca.not_after())
    path = tmp_path / "issued.crt"
    path.write_text(issued)
    text = openssl.run("x509", "-in", str(path), "-noout", "-text")
    assert "TLS Web Server Authentication" in text and "TLS Web Client Authentication" not in text
    assert "CA:FALSE" in text and openssl.verifies(str(path), ca.cert_file)
    assert openssl.alt_names(str(path)) == {"DNS:n1", "IP:10.0.0.7"}
    dates = dict(line.split("=", 1) for line in openssl.run("x509", "-in", str(path), "-noout", "-dates").splitlines())
    assert ssl.cert_time_to_seconds(dates["notBefore"]) == (now - timedelta(minutes=5)).timestamp()
    assert ssl.cert_time_to_seconds(dates["notAfter"]) == (now + timedelta(hours=1)).timestamp()


def test_never_past_the_cas_own_end(ca, tmp_path: Path) -> None:
    pem = make_csr(tmp_path, "/CN=alice")
    now = datetime.now(UTC).replace(microsecond=0)
    end = now + timedelta(days=2)
    path = tmp_path / "issued.crt"
    path.write_text(authority.issue(ca, pem, request.parse(pem), ["client auth"], now=now,
                                    duration=timedelta(days=365), ca_not_after=end))
    assert ssl.cert_time_to_seconds(openssl.run("x509", "-in", str(path), "-noout", "-enddate").split("=", 1)[1]
                                    .strip()) == end.timestamp()


def test_a_request_whose_signature_does_not_verify_is_refused(tmp_path: Path) -> None:
    pem = make_csr(tmp_path, "/CN=alice").decode()
    lines = pem.splitlines()
    lines[3] = "A" * len(lines[3])
    with pytest.raises(request.RequestError):
        request.parse(("\n".join(lines) + "\n").encode())


def test_the_ca_lives_ten_years(ca) -> None:
    assert timedelta(days=3649) < ca.not_after() - datetime.now(UTC) <= timedelta(days=3650)
