"""The node join token (control/util/jointoken.py): k3s's secure `K10<CA hash>::<user>:<password>` and short forms."""

from __future__ import annotations

import hashlib

import pytest

from control.util.jointoken import JoinToken, TokenError, ca_hash, matches_ca, parse

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
HASH = hashlib.sha256(CA).hexdigest()


@pytest.mark.parametrize("text,expected", [
    pytest.param(f"K10{HASH}::node:s3cret\n", JoinToken("s3cret", HASH, "node"), id="secure"),
    pytest.param(f"K10{HASH.upper()}::server:pw", JoinToken("pw", HASH, "server"), id="upper-case-hash"),
    pytest.param(f"K10{HASH}::pw", JoinToken("pw", HASH), id="secure-bearer-without-user"),
    pytest.param(f"K10{HASH}::node:a:b", JoinToken("a:b", HASH, "node"), id="password-with-colon"),
    pytest.param("abc123", JoinToken("abc123"), id="short"),
    pytest.param("K10xyz", JoinToken("K10xyz"), id="short-starting-with-K10"),
])
def test_parse(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("text", [
    pytest.param("", id="empty"),
    pytest.param("  \n", id="blank"),
    pytest.param("K10abc::node:pw", id="short-hash"),
    pytest.param(f"K10{HASH}::node:", id="no-password"),
    pytest.param("two words", id="whitespace"),
])
def test_parse_refuses(text):
    with pytest.raises(TokenError) as info:
        parse(text)
    assert "pw" not in str(info.value)  # never echoes the secret


def test_str_round_trips_and_short_token_is_the_password():
    token = JoinToken("pw", ca_hash(CA))
    assert str(token) == f"K10{HASH}::node:pw" and parse(str(token)) == token and token.secure
    assert str(JoinToken("pw")) == "pw" and not JoinToken("pw").secure


def test_matches_ca_only_for_the_exact_bundle():
    assert matches_ca(parse(f"K10{HASH}::node:pw"), CA)
    assert not matches_ca(parse(f"K10{HASH}::node:pw"), CA + b"\n")
    assert not matches_ca(parse("pw"), CA)
