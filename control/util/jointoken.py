"""The node join token: what `DIR/node-token` holds and `slimkube agent --token` takes (k3s's "secure"
token format, docs.k3s.io/cli/token).

    K10<sha256 hex of the server CA bundle, PEM as on disk>::<user>:<password>

The hash lets a joining node authenticate the server before it sends any credential: it downloads
`/cacerts` without verifying TLS, compares the bundle's sha256 with the token's and only then trusts
that CA (nodeagent/bootstrap.py). The password is the bearer token the API server accepts; the server
also accepts the whole string, so a token pasted into `curl -H "Authorization: Bearer ..."` works too.

A "short" token (the password alone, k3s's other format) carries no CA hash; k3s then trusts whatever
CA the server presents, slimkube does not: such a token needs `--ca-file` (never silently insecure).

Pure functions only; reading and writing the file is the API server's, fetching `/cacerts` the agent's.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass

PREFIX = "K10"
NODE_USER = "node"
_SECURE = re.compile(r"^K10(?P<hash>[0-9a-fA-F]{64})::(?P<credentials>.+)$")


class TokenError(ValueError):
    """A token that cannot be used; the message says why without echoing the secret."""


@dataclass(frozen=True)
class JoinToken:
    password: str  # the bearer credential
    ca_hash: str | None = None  # lower-case sha256 hex of the CA bundle; None for a short token
    user: str = NODE_USER

    @property
    def secure(self) -> bool:
        return self.ca_hash is not None

    def __str__(self) -> str:
        if self.ca_hash is None:
            return self.password
        return f"{PREFIX}{self.ca_hash}::{self.user}:{self.password}"


def ca_hash(bundle: bytes) -> str:
    """The hash a secure token carries: sha256 of the CA bundle's bytes exactly as served."""
    return hashlib.sha256(bundle).hexdigest()


def parse(text: str) -> JoinToken:
    """A secure (`K10...`) or short token; surrounding whitespace (a trailing newline) is ignored."""
    text = text.strip()
    if not text:
        raise TokenError("the token is empty")
    if text.startswith(PREFIX) and "::" in text:
        match = _SECURE.match(text)
        if match is None:
            raise TokenError("malformed K10 token: expected K10<64 hex digits>::<user>:<password>")
        credentials = match["credentials"]
        user, _, password = credentials.partition(":") if ":" in credentials else (NODE_USER, "", credentials)
        if not password:
            raise TokenError("malformed K10 token: the password after <user>: is empty")
        return JoinToken(password=password, ca_hash=match["hash"].lower(), user=user or NODE_USER)
    if any(c.isspace() for c in text):
        raise TokenError("the token contains whitespace")
    return JoinToken(password=text)


def matches_ca(token: JoinToken, bundle: bytes) -> bool:
    """Whether `bundle` is the CA the token names (constant-time compare)."""
    if token.ca_hash is None:
        return False
    return hmac.compare_digest(ca_hash(bundle), token.ca_hash)
