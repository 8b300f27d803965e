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

Then the node's own identity (upstream's kubelet TLS bootstrap, pkg/kubelet/certificate/bootstrap; k3s's
node passwords): `node_credentials` turns the join token's ClientConfig into one with the node's client
certificate (`system:node:<name>`, group `system:nodes`) kept in `DIR/agent/kubelet-client.{crt,key}`
(0600). A kept certificate that chains to the cluster CA, names this node and is not yet due for rotation
is used as it is; otherwise the join token creates a CertificateSigningRequest for the
`kubernetes.io/kube-apiserver-client-kubelet` signer, signed by the node password key
`DIR/agent/node-password.key` (made once, 0600: the first join of a name records it, a later join of the
name must be signed by it, docs/identity.md), and waits for the certificate. The token is then used for
nothing else. `client_rotation` renews the certificate as the node itself, with a new key, before expiry.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import requests
from urllib3.exceptions import InsecureRequestWarning

from control.client.kubeconfig import ClientConfig
from control.client.rest import RESTClient
from control.util import jointoken, openssl
from nodeagent import csr, rotation

CA_FILE_NAME = "server-ca.crt"
CLIENT_CERT, CLIENT_KEY, NODE_PASSWORD_KEY = "kubelet-client.crt", "kubelet-client.key", "node-password.key"
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


@dataclass(frozen=True)
class NodeCertificate:
    """Where the node's client certificate, its key and the node password key live (`DIR/agent/`)."""

    directory: str

    @property
    def cert_file(self) -> str:
        return os.path.join(self.directory, CLIENT_CERT)

    @property
    def key_file(self) -> str:
        return os.path.join(self.directory, CLIENT_KEY)

    @property
    def node_password_key(self) -> str:
        return os.path.join(self.directory, NODE_PASSWORD_KEY)


def node_certificate(data_dir: str) -> NodeCertificate:
    return NodeCertificate(os.path.join(data_dir, "agent"))


def _subject_common_name(cert_file: str) -> str:
    subject = openssl.run("x509", "-in", cert_file, "-noout", "-subject", "-nameopt", "RFC2253").strip()
    for part in subject.partition("=")[2].split(","):
        key, _, value = part.partition("=")
        if key.strip() == "CN":
            return value.strip()
    return ""


def usable(files: NodeCertificate, node_name: str, ca_file: str | None, *, now: float) -> bool:
    """A kept client certificate this node may go on using."""
    if not (os.path.exists(files.cert_file) and os.path.exists(files.key_file)):
        return False
    try:
        if ca_file is not None and not openssl.verifies(files.cert_file, ca_file):
            return False
        period = rotation.validity(files.cert_file)
        return (_subject_common_name(files.cert_file) == f"system:node:{node_name}"
                and not rotation.needs_new(period, now))
    except (openssl.OpenSSLError, KeyError, ValueError):
        return False


def with_certificate(config: ClientConfig, files: NodeCertificate) -> ClientConfig:
    return dataclasses.replace(config, token=None, cert_file=files.cert_file, key_file=files.key_file)


def node_credentials(join_config: ClientConfig, node_name: str, *, data_dir: str,
                     stop: threading.Event | None = None, timeout: float = 300.0) -> ClientConfig:
    """The node's own ClientConfig (module notes); BootstrapError when the join is refused or times out."""
    files = node_certificate(data_dir)
    if usable(files, node_name, join_config.ca_file, now=time.time()):
        return with_certificate(join_config, files)
    if not os.path.exists(files.node_password_key):
        csr.make_key(files.node_password_key)
    request = csr.certificate_request(files.node_password_key, csr.node_subject(node_name))
    try:
        with RESTClient(join_config, user_agent=f"slimkube-kubelet/{node_name} (bootstrap)") as client:
            certificate = csr.request_certificate(client, request, signer=csr.KUBELET_CLIENT,
                                                  usages=csr.CLIENT_USAGES, timeout=timeout, stop=stop)
    except csr.CSRError as exc:
        raise BootstrapError(f"joining as node {node_name}: {exc}") from None
    csr.write_pair(files.cert_file, certificate, files.key_file, files.node_password_key)
    return with_certificate(join_config, files)


def client_rotation(config: ClientConfig, node_name: str, *, data_dir: str) -> rotation.Rotator:
    """A Rotator renewing the node's client certificate as the node (selfnodeclient), with a new key."""
    files = node_certificate(data_dir)

    def renew(stop: threading.Event) -> None:
        new_key = files.key_file + ".next"
        csr.make_key(new_key)
        request = csr.certificate_request(new_key, csr.node_subject(node_name))
        with RESTClient(config, user_agent=f"slimkube-kubelet/{node_name} (rotation)") as client:
            certificate = csr.request_certificate(client, request, signer=csr.KUBELET_CLIENT,
                                                  usages=csr.CLIENT_USAGES, stop=stop)
        csr.write_pair(files.cert_file, certificate, files.key_file, new_key)
        os.unlink(new_key)

    return rotation.Rotator("kubelet client", files.cert_file, renew)
