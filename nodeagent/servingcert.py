"""The kubelet's serving certificate (upstream: pkg/kubelet/certificate/kubelet.go NewKubeletServerCertificateManager
with `serverTLSBootstrap`: a CertificateSigningRequest for the `kubernetes.io/kubelet-serving` signer).

At start the kubelet keeps a key in `DIR/kubelet/pki/kubelet.key` (made once, mode 0600) and a certificate
in `kubelet.crt`. The certificate is kept while it chains to the cluster CA the agent trusts, names
everything it must and is not yet due for rotation (rotation.py); otherwise the kubelet, as the node itself,
creates a CSR for its key with those names and waits until the cluster's approver and signer answer
(control/controllers/certificates/: only the node's own name and the addresses its Node reports are
approved, never loopback, a service name or an address of the API server — so the kubelet does not ask for
the API server's). The private key never leaves the node. `serving_rotation` renews it before expiry, with a new key,
and hands the new pair to the running HTTPS server.

The names: the node name (what the API server verifies when it calls the kubelet: it dials the Node's
address but checks the certificate against the node's name) and the node's InternalIP, unless that is one
of the API server's (a node on the API server's host shares its address).

Without a cluster CA (an `http://` API server, the operator's explicit choice of no TLS) there is nobody to
sign, so the kubelet makes a self-signed certificate, as upstream's kubelet does when given none; clients
then cannot verify it, and no client certificate can be checked either: only TokenReview tokens work.

`wanted_names` is pure; `ensure` does the files and the request through the injected `sign` callable.
"""

from __future__ import annotations

import ipaddress
import os
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from control.util import openssl
from nodeagent import csr, rotation

PKI_DIR = "pki"
Sign = Callable[[bytes], bytes]  # the PEM CSR (subject and names in it) → the PEM certificate


@dataclass(frozen=True)
class ServingTLS:
    """What the kubelet's HTTPS server loads: its certificate and key, and the CA client certificates must
    chain to (None: no client certificate is accepted)."""

    cert_file: str
    key_file: str
    client_ca_file: str | None


def wanted_names(node_name: str, *, addresses: Iterable[str], hostnames: Iterable[str] = (),
                 excluded: Collection[str] = ()) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) the certificate must name: the node name and host names, and every
    specific address but `excluded` (the API server's, which the approver refuses); the unspecified ones,
    0.0.0.0 and ::, name nothing."""
    dns = list(dict.fromkeys([node_name, *(h.lower() for h in hostnames if h)]))
    ips: list[str] = []
    for text in addresses:
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            continue
        if not address.is_unspecified and str(address) not in ips and str(address) not in excluded:
            ips.append(str(address))
    return dns, ips


def _alt_names(dns: list[str], ips: list[str]) -> set[str]:
    return {f"DNS:{name}" for name in dns} | {openssl.normal(f"IP:{ip}") for ip in ips}


def apiserver_addresses(client: csr.Client) -> set[str]:
    """The API server's addresses (the `kubernetes` Endpoints), which the kubelet must not ask for; empty
    when they cannot be read (the approver refuses them anyway)."""
    try:
        endpoints = client.get("/api/v1/namespaces/default/endpoints/kubernetes")
    except Exception:  # noqa: BLE001 - best effort: an unreadable answer only means a request that is refused
        return set()
    return {str(address.get("ip")) for subset in endpoints.get("subsets") or []
            for address in subset.get("addresses") or [] if isinstance(address, dict) and address.get("ip")}


def csr_signer(client: csr.Client, *, stop: threading.Event | None = None, timeout: float = 300.0) -> Sign:
    """A Sign that asks the cluster through a kubelet-serving CertificateSigningRequest."""
    def sign(request: bytes) -> bytes:
        return csr.request_certificate(client, request, signer=csr.KUBELET_SERVING, usages=csr.SERVING_USAGES,
                                       timeout=timeout, stop=stop)
    return sign


def _kept(cert: str, key: str, names: set[str], ca_file: str | None) -> bool:
    if not (os.path.exists(cert) and os.path.exists(key)) or not names <= openssl.alt_names(cert):
        return False
    if ca_file is None:
        return True
    try:
        return openssl.verifies(cert, ca_file) and not rotation.needs_new(rotation.validity(cert), time.time())
    except (openssl.OpenSSLError, KeyError, ValueError):
        return False


def ensure(state_dir: str, node_name: str, *, addresses: Iterable[str], ca_file: str | None, sign: Sign,
           hostnames: Iterable[str] = (), excluded: Collection[str] = (), new_key: bool = False) -> ServingTLS:
    """The serving certificate and key under `state_dir/pki`, asked for through `sign` when the kept one does
    not chain to `ca_file`, lacks a name or is due for rotation (a new key with `new_key`); self-signed when
    there is no CA (see the module notes)."""
    directory = os.path.join(state_dir, PKI_DIR)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    cert, key = os.path.join(directory, "kubelet.crt"), os.path.join(directory, "kubelet.key")
    dns, ips = wanted_names(node_name, addresses=addresses, hostnames=hostnames, excluded=excluded)
    alt = sorted(_alt_names(dns, ips))
    subject = csr.node_subject(node_name)
    if not new_key and _kept(cert, key, set(alt), ca_file):
        return ServingTLS(cert, key, ca_file)
    old_umask = os.umask(0o077)
    try:
        with tempfile.TemporaryDirectory(dir=directory) as work:
            if ca_file is None:
                extensions = ("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,"
                              f"keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName={','.join(alt)}\n")
                openssl.run("req", "-x509", *openssl.EC_KEY, "-keyout", key, "-out", f"{cert}.tmp", "-days", "365",
                            "-subj", subject, "-extensions", "v3_req", "-config", _config(work, extensions))
                os.replace(f"{cert}.tmp", cert)
            else:
                next_key = os.path.join(work, "kubelet.key")
                if os.path.exists(key) and not new_key:
                    next_key = key
                else:
                    csr.make_key(next_key)
                pem = sign(csr.certificate_request(next_key, subject, alt))
                csr.write_pair(cert, pem, key, next_key)
    finally:
        os.umask(old_umask)
    return ServingTLS(cert, key, ca_file)


def serving_rotation(state_dir: str, node_name: str, *, names: Callable[[], tuple[list[str], list[str]]],
                     ca_file: str, sign: Sign, reload: Callable[[ServingTLS], None]) -> rotation.Rotator:
    """A Rotator renewing the serving certificate (new key, the names `names()` gives: (addresses, excluded)),
    then `reload`ing the HTTPS server with it."""
    def renew(stop: threading.Event) -> None:
        addresses, excluded = names()
        reload(ensure(state_dir, node_name, addresses=addresses, excluded=excluded, ca_file=ca_file, sign=sign,
                      new_key=True))

    return rotation.Rotator("kubelet serving", os.path.join(state_dir, PKI_DIR, "kubelet.crt"), renew)


def _config(work: str, extensions: str) -> str:
    """A minimal openssl config whose v3_req section holds `extensions` (for `req -x509`)."""
    path = os.path.join(work, "openssl.cnf")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("[req]\ndistinguished_name = dn\n[dn]\n[v3_req]\n" + extensions)
    return path
