"""The kubelet's serving certificate (nodeagent/servingcert.py): the names it must carry, a CSR signed
through the injected `sign` (here by a real CA with control/apiserver/authentication/certs.sign), kept while it
chains to the CA and names everything, asked for again when an address is new or the CA changed; self-signed with no
CA."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from control.apiserver.authentication import certs, kubeletcerts
from control.util import openssl
from nodeagent import servingcert

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


@pytest.mark.parametrize(("addresses", "hostnames", "expected"), [
    pytest.param(["10.0.0.5", "0.0.0.0"], ["Host-A"], (["node-1", "host-a"], ["10.0.0.5"]), id="unspecified-dropped"),
    pytest.param(["127.0.0.1", "127.0.0.1", "::"], [], (["node-1"], ["127.0.0.1"]), id="dedup"),
    pytest.param(["not-an-ip", "fd00::1"], ["node-1"], (["node-1"], ["fd00::1"]), id="node-name-once"),
])
def test_wanted_names(addresses: list[str], hostnames: list[str], expected: tuple) -> None:
    assert servingcert.wanted_names("node-1", addresses=addresses, hostnames=hostnames) == expected


class Signer:
    """The API server's signing, without HTTP: parse the body as the server does, sign with its CA."""

    def __init__(self, data_dir: str) -> None:
        self.served = certs.ensure_serving_certs(data_dir, bind_address="127.0.0.1", service_ip="10.96.0.1")
        self.bodies: list[dict] = []

    def __call__(self, body: dict) -> str:
        self.bodies.append(body)
        wanted = kubeletcerts.parse(body)
        return certs.sign(self.served, wanted.csr_pem, subject=wanted.subject, extensions=wanted.extensions).decode()


def test_signed_kept_and_asked_again_for_a_new_address(tmp_path: Path) -> None:
    sign = Signer(str(tmp_path / "server"))
    state = str(tmp_path / "kubelet")
    tls = servingcert.ensure(state, "node-1", addresses=["10.0.0.5"], ca_file=sign.served.ca_path, sign=sign)
    assert tls.client_ca_file == sign.served.ca_path and openssl.verifies(tls.cert_file, sign.served.ca_path)
    assert openssl.alt_names(tls.cert_file) == {"DNS:node-1", "IP:10.0.0.5"}
    assert os.stat(tls.key_file).st_mode & 0o077 == 0
    assert "PRIVATE KEY" not in str(sign.bodies[0])  # only the CSR travels
    with open(tls.key_file) as handle:
        key = handle.read()
    assert servingcert.ensure(state, "node-1", addresses=["10.0.0.5"], ca_file=sign.served.ca_path,
                              sign=sign) == tls
    assert len(sign.bodies) == 1
    servingcert.ensure(state, "node-1", addresses=["10.0.0.5", "10.250.0.1"], ca_file=sign.served.ca_path,
                       sign=sign)
    assert len(sign.bodies) == 2 and openssl.alt_names(tls.cert_file) == {"DNS:node-1", "IP:10.0.0.5",
                                                                          "IP:10.250.0.1"}
    with open(tls.key_file) as handle:
        assert handle.read() == key  # the same key, a new certificate


def test_a_new_ca_gets_a_new_certificate(tmp_path: Path) -> None:
    state = str(tmp_path / "kubelet")
    first = Signer(str(tmp_path / "one"))
    servingcert.ensure(state, "node-1", addresses=["10.0.0.5"], ca_file=first.served.ca_path, sign=first)
    second = Signer(str(tmp_path / "two"))
    tls = servingcert.ensure(state, "node-1", addresses=["10.0.0.5"], ca_file=second.served.ca_path, sign=second)
    assert len(second.bodies) == 1 and openssl.verifies(tls.cert_file, second.served.ca_path)
    assert not openssl.verifies(tls.cert_file, first.served.ca_path)


def test_no_ca_means_self_signed_and_no_client_ca(tmp_path: Path) -> None:
    def refuse(body: dict) -> str:
        raise AssertionError("nobody to sign")

    tls = servingcert.ensure(str(tmp_path), "node-1", addresses=["10.0.0.5"], ca_file=None, sign=refuse)
    assert tls.client_ca_file is None and openssl.verifies(tls.cert_file, tls.cert_file)
    assert openssl.alt_names(tls.cert_file) == {"DNS:node-1", "IP:10.0.0.5"}
