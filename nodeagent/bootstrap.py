"""How an agent given only `--server URL --token TOKEN` comes to trust the API server (k3s's TLS
bootstrapping, docs.k3s.io/cli/token "TLS Bootstrapping"; the token format is control/util/jointoken.py).

1. With TLS verification off, download the CA bundle from `URL/cacerts` (no credential is sent).
2. Compare its sha256 with the hash in the `K10...` token; a mismatch stops here, before the token's
   password ever leaves the node (a man in the middle learns nothing).
3. Keep the bundle under the agent's data dir (`DIR/agent/server-ca.crt`) and build a ClientConfig
   with that CA and the password as bearer token; every later request verifies the server with it.

Unlike k3s, a short token (no hash) is not trusted blindly over https: it needs `--ca-file`, or the
agent refuses with a message that says so. An `http://` server URL is the operator's explicit choice
of no TLS and is used as given. An explicit `--ca-file` with a secure token must match the token's hash.

`decide` is the pure part (unit-tested with tables); `join` does the I/O through a `fetch` callable.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import requests
from urllib3.exceptions import InsecureRequestWarning

from control.client.kubeconfig import ClientConfig
from control.util import jointoken

CA_FILE_NAME = "server-ca.crt"
FETCH_TIMEOUT = 10.0
Fetch = Callable[[str], bytes]


class BootstrapError(RuntimeError):
    """The agent cannot establish trust in the server; the message says what to do."""


@dataclass(frozen=True)
class Plan:
    """What `join` must do: fetch `/cacerts` and check it against `ca_hash`, or use `ca_file` as is."""

    fetch_ca: bool
    ca_file: str | None
    check_hash: str | None


def agent_ca_path(data_dir: str) -> str:
    return os.path.join(data_dir, "agent", CA_FILE_NAME)


def decide(server: str, token: jointoken.JoinToken, *, ca_file: str | None) -> Plan:
    """How to trust `server` given the token and an optional explicit CA file."""
    scheme = server.split("://", 1)[0].lower() if "://" in server else ""
    if scheme not in ("http", "https"):
        raise BootstrapError(f"--server must be an http:// or https:// URL, got {server!r}")
    if ca_file:
        return Plan(fetch_ca=False, ca_file=ca_file, check_hash=token.ca_hash)
    if scheme == "http":
        return Plan(fetch_ca=False, ca_file=None, check_hash=None)
    if token.ca_hash is None:
        raise BootstrapError("the token has no CA hash (not a K10... token), so the server cannot be verified: "
                             "pass --ca-file with the server's CA (DIR/tls/ca.crt on the server), or use the "
                             "full token from the server's DIR/node-token")
    return Plan(fetch_ca=True, ca_file=None, check_hash=token.ca_hash)


def fetch_cacerts(server: str) -> bytes:
    """`GET /cacerts` without verifying TLS (the hash check is what authenticates the answer)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRequestWarning)
        try:
            response = requests.get(server.rstrip("/") + "/cacerts", verify=False, timeout=FETCH_TIMEOUT)
        except requests.RequestException as exc:
            raise BootstrapError(f"cannot reach {server}: {exc}") from None
    if response.status_code != 200:
        raise BootstrapError(f"{server}/cacerts answered {response.status_code}; is it a slimkube server with TLS?")
    return response.content


def _write_ca(path: str, bundle: bytes) -> None:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as handle:
        handle.write(bundle)
    os.replace(tmp, path)


def join(server: str, token_text: str, *, data_dir: str, ca_file: str | None = None,
         fetch: Fetch = fetch_cacerts) -> ClientConfig:
    """The ClientConfig of an agent joining `server` with `token_text` (see the module notes)."""
    try:
        token = jointoken.parse(token_text)
    except jointoken.TokenError as exc:
        raise BootstrapError(f"--token: {exc}") from None
    server = server.rstrip("/")
    plan = decide(server, token, ca_file=ca_file)
    path = plan.ca_file
    if plan.ca_file is not None and plan.check_hash is not None:
        try:
            with open(plan.ca_file, "rb") as handle:
                bundle = handle.read()
        except OSError as exc:
            raise BootstrapError(f"--ca-file: cannot read {plan.ca_file}: {exc.strerror}") from None
        if not jointoken.matches_ca(token, bundle):
            raise BootstrapError(f"--ca-file {plan.ca_file} is not the CA the token names (sha256 differs)")
    if plan.fetch_ca:
        bundle = fetch(server)
        if not jointoken.matches_ca(token, bundle):
            raise BootstrapError(f"the CA served by {server}/cacerts does not match the token's hash: "
                                 "wrong server, a changed CA, or someone in between; nothing was sent")
        path = agent_ca_path(data_dir)
        _write_ca(path, bundle)
    return ClientConfig(server=server, token=token.password, ca_file=path)
