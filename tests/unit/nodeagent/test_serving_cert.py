"""The kubelet's serving certificate (nodeagent/servingcert.py): the names it must carry (never the API server's
addresses), a CSR signed through the injected `sign` (here by a real CA, tests/support/ca_signing.py),
kept while it chains to the CA and names everything, asked for again when an address is new, the CA changed or
it is due for rotation (with a new key when rotating); self-signed with no CA."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from control.apiserver.authentication import certs
from control.util import openssl
from nodeagent import servingcert
from tests.support.ca_signing import CASigner

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


@pytest.mark.parametrize(("addresses", "hostnames", "expected"), [
    pytest.param(["10.0.0.5", "0.0.0.0"], ["Host-A"], (["node-1", "host-a"], ["10.0.0.5"]), id="unspecified-dropped"),
    pytest.param(["127.0.0.1", "127.0.0.1", "::"], [], (["node-1"], ["127.0.0.1"]), id="dedup"),
    pytest.param(["10.0.0.9", "10.0.0.5"], [], (["node-1"], ["10.0.0.5"]), id="the-api-servers-dropped"),
    pytest.param(["not-an-ip", "fd00::1"], ["node-1"], (["node-1"], ["fd00::1"]), id="node-name-once"),
])
def test_wanted_names(addresses: list[str], hostnames: list[str], expected: tuple) -> None:
    assert servingcert.wanted_names("node-1", addresses=addresses, hostnames=hostnames,
                                    excluded={"10.0.0.9"}) == expected


class Signer(CASigner):
    """A server's CA (made under `data_dir`) signing the kubelet's requests."""

    def __init__(self, data_dir: str) -> None:
        served = certs.ensure_serving_certs(data_dir, bind_address="127.0.0.1", service_ip="10.96.0.1")
        super().__init__(served.directory)
        self.served = served

    @property
    def bodies(self) -> list[bytes]:
        return self.requests


def test_signed_kept_and_asked_again_for_a_new_address(tmp_path: Path) -> None:
    sign = Signer(str(tmp_path / "server"))
    state = str(tmp_path / "kubelet")
    tls = servingcert.ensure(state, "node-1", addresses=["10.0.0.5"], ca_file=sign.served.ca_path, sign=sign)
    assert tls.client_ca_file == sign.served.ca_path and openssl.verifies(tls.cert_file, sign.served.ca_path)
    assert openssl.alt_names(tls.cert_file) == {"DNS:node-1", "IP:10.0.0.5"}
    assert os.stat(tls.key_file).st_mode & 0o077 == 0
    assert b"PRIVATE KEY" not in sign.bodies[0]  # only the CSR travels
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
    def refuse(body: bytes) -> bytes:
        raise AssertionError("nobody to sign")

    tls = servingcert.ensure(str(tmp_path), "node-1", addresses=["10.0.0.5"], ca_file=None, sign=refuse)
    assert tls.client_ca_file is None and openssl.verifies(tls.cert_file, tls.cert_file)
    assert openssl.alt_names(tls.cert_file) == {"DNS:node-1", "IP:10.0.0.5"}


def test_rotation_asks_again_with_a_new_key(tmp_path: Path) -> None:
    sign = Signer(str(tmp_path / "server"))
    state = str(tmp_path / "kubelet")
    tls = servingcert.ensure(state, "node-1", addresses=["10.0.0.5"], ca_file=sign.ca_path, sign=sign)
    key = Path(tls.key_file).read_text()
    rotated = servingcert.ensure(state, "node-1", addresses=["10.0.0.5"], ca_file=sign.ca_path, sign=sign,
                                 new_key=True)
    assert len(sign.bodies) == 2 and Path(rotated.key_file).read_text() != key
    assert openssl.verifies(rotated.cert_file, sign.ca_path)
    assert os.stat(rotated.key_file).st_mode & 0o077 == 0
