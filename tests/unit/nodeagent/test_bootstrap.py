"""The agent's TLS bootstrap (nodeagent/bootstrap.py) with a fake `/cacerts` fetch."""

from __future__ import annotations

import os

import pytest

from control.util.jointoken import JoinToken, ca_hash
from nodeagent.bootstrap import BootstrapError, Plan, agent_ca_path, decide, join

CA = b"-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
SECURE = str(JoinToken("pw", ca_hash(CA)))


class FakeFetch:
    def __init__(self, bundle: bytes) -> None:
        self.bundle = bundle
        self.calls: list[str] = []

    def __call__(self, server: str) -> bytes:
        self.calls.append(server)
        return self.bundle


@pytest.mark.parametrize("server,token,ca_file,plan", [
    pytest.param("https://s:6443", JoinToken("pw", "ab"), None, Plan(True, None, "ab"), id="secure-fetches"),
    pytest.param("https://s:6443", JoinToken("pw", "ab"), "/ca", Plan(False, "/ca", "ab"), id="secure-with-file"),
    pytest.param("https://s:6443", JoinToken("pw"), "/ca", Plan(False, "/ca", None), id="short-with-file"),
    pytest.param("http://s:8080", JoinToken("pw"), None, Plan(False, None, None), id="plain-http"),
])
def test_decide(server, token, ca_file, plan):
    assert decide(server, token, ca_file=ca_file) == plan


@pytest.mark.parametrize("server,token,message", [
    pytest.param("https://s:6443", JoinToken("pw"), "--ca-file", id="short-token-over-https"),
    pytest.param("s:6443", JoinToken("pw", "ab"), "http:// or https://", id="no-scheme"),
])
def test_decide_refuses(server, token, message):
    with pytest.raises(BootstrapError, match=message):
        decide(server, token, ca_file=None)


def test_join_checks_the_served_ca_and_keeps_it(tmp_path):
    fetch = FakeFetch(CA)
    config = join("https://s:6443/", SECURE + "\n", data_dir=str(tmp_path), fetch=fetch)
    assert fetch.calls == ["https://s:6443"]
    assert (config.server, config.token, config.ca_file) == ("https://s:6443", "pw", agent_ca_path(str(tmp_path)))
    with open(config.ca_file, "rb") as handle:
        assert handle.read() == CA


def test_join_refuses_a_ca_that_does_not_match_and_writes_nothing(tmp_path):
    with pytest.raises(BootstrapError, match="does not match"):
        join("https://s:6443", SECURE, data_dir=str(tmp_path), fetch=FakeFetch(CA + b"x"))
    assert not os.path.exists(agent_ca_path(str(tmp_path)))


def test_join_with_an_explicit_ca_file_checks_it_against_the_token(tmp_path):
    good, bad = tmp_path / "good.crt", tmp_path / "bad.crt"
    good.write_bytes(CA)
    bad.write_bytes(b"other")
    fetch = FakeFetch(b"never")
    config = join("https://s:6443", SECURE, data_dir=str(tmp_path), ca_file=str(good), fetch=fetch)
    assert config.ca_file == str(good) and not fetch.calls
    with pytest.raises(BootstrapError, match="not the CA the token names"):
        join("https://s:6443", SECURE, data_dir=str(tmp_path), ca_file=str(bad), fetch=fetch)
    short = join("https://s:6443", "pw", data_dir=str(tmp_path), ca_file=str(bad), fetch=fetch)
    assert (short.token, short.ca_file) == ("pw", str(bad))


def test_join_refuses_a_malformed_token(tmp_path):
    with pytest.raises(BootstrapError, match="--token: malformed K10"):
        join("https://s:6443", "K10abc::node:pw", data_dir=str(tmp_path), fetch=FakeFetch(CA))
