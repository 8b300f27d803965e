"""Asking the cluster for a certificate through a CertificateSigningRequest and waiting for it (upstream:
k8s.io/client-go/util/certificate/csr RequestCertificate and WaitForCertificate, which the kubelet's
bootstrap and certificate manager use).

The request is created under a random name (`node-csr-<32 hex>`): a joiner that may only create and get
CSRs cannot find another's. The answer is polled with GET (the join token may not watch), once a second,
until the certificate is issued, or the request is Denied or Failed (CSRError with the condition's message),
or `timeout` passes. The private key never leaves the node: openssl makes the CSR from a key file.
"""

from __future__ import annotations

import base64
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from control.util import openssl

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
CLIENT_USAGES = ("digital signature", "client auth")  # an EC key: upstream's usages without key encipherment
SERVING_USAGES = ("digital signature", "server auth")
POLL_SECONDS = 1.0


class CSRError(RuntimeError):
    """The request was denied or failed, or no certificate came in time."""


class Client(Protocol):
    def get(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def create(self, path: str, body: dict[str, Any], *,
               params: Mapping[str, str] | None = None) -> dict[str, Any]: ...


def node_subject(node_name: str) -> str:
    return f"/O=system:nodes/CN=system:node:{node_name}"


def make_key(path: str) -> None:
    """A new EC P-256 key at `path`, mode 0600 from the start, replacing any old one atomically."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    old_umask = os.umask(0o077)
    try:
        openssl.run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", f"{path}.tmp")
    finally:
        os.umask(old_umask)
    os.replace(f"{path}.tmp", path)


def certificate_request(key_file: str, subject: str, alt_names: Sequence[str] = ()) -> bytes:
    """The PEM CSR for `key_file`'s key, `subject` (openssl /O=…/CN=… form) and `alt_names` (DNS:…, IP:…)."""
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "request.csr")
        extra = ["-addext", "subjectAltName=" + ",".join(alt_names)] if alt_names else []
        openssl.run("req", "-new", "-key", key_file, "-out", out, "-subj", subject, *extra)
        with open(out, "rb") as handle:
            return handle.read()


def _condition(csr: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (csr.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def request_certificate(client: Client, csr_pem: bytes, *, signer: str, usages: Sequence[str],
                        timeout: float = 300.0, stop: threading.Event | None = None) -> bytes:
    """Create the CSR and wait for its certificate (PEM), as the module notes say."""
    name = f"node-csr-{secrets.token_hex(16)}"
    client.create(CSRS, {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                         "metadata": {"name": name},
                         "spec": {"request": base64.b64encode(csr_pem).decode(), "signerName": signer,
                                  "usages": list(usages)}})
    deadline = time.monotonic() + timeout
    while True:
        csr = client.get(f"{CSRS}/{name}")
        certificate = (csr.get("status") or {}).get("certificate")
        if certificate:
            return base64.b64decode(certificate)
        for kind in ("Denied", "Failed"):
            if (condition := _condition(csr, kind)) is not None:
                raise CSRError(f"certificate signing request {name} was {kind.lower()}: "
                               f"{condition.get('reason', '')}: {condition.get('message', '')}")
        if time.monotonic() > deadline:
            raise CSRError(f"no certificate for {name} within {timeout:.0f}s: are the csrapproving and csrsigning "
                           "controllers running?")
        if stop is not None:
            if stop.wait(POLL_SECONDS):
                raise CSRError(f"stopped while waiting for {name}")
        else:
            time.sleep(POLL_SECONDS)


def write_pair(cert_file: str, cert_pem: bytes, key_file: str, key_source: str) -> None:
    """Install a certificate and its key (copied from `key_source` unless it is `key_file`), both 0600, each
    replaced atomically, the key first so the pair on disk never mixes a new certificate with an old key
    for long (readers load both at connection time)."""
    old_umask = os.umask(0o077)
    try:
        if os.path.abspath(key_source) != os.path.abspath(key_file):
            with open(key_source, "rb") as handle:
                key = handle.read()
            with open(f"{key_file}.tmp", "wb") as handle:
                handle.write(key)
            os.replace(f"{key_file}.tmp", key_file)
        with open(f"{cert_file}.tmp", "wb") as handle:
            handle.write(cert_pem)
        os.replace(f"{cert_file}.tmp", cert_file)
    finally:
        os.umask(old_umask)
