"""The kubelet's serving certificate (upstream: pkg/kubelet/certificate/kubelet.go NewKubeletServerCertificateManager
with `serverTLSBootstrap`; k3s's agent, which asks its server for `serving-kubelet.crt`).

At start the kubelet keeps a key in `DIR/kubelet/pki/kubelet.key` (made once, mode 0600) and a certificate
in `kubelet.crt`. The certificate is kept while it chains to the cluster CA the agent trusts and names
everything it must (the node name, the host name, the InternalIP, the listen address when it is a specific
one); otherwise the kubelet sends a CSR for its key with those names to the API server over its
authenticated join channel (control/apiserver/authentication/kubeletcerts.py) and stores what comes back.
The private key never leaves the node.

Without a cluster CA (an `http://` API server, the operator's explicit choice of no TLS) there is nobody to
sign, so the kubelet makes a self-signed certificate, as upstream's kubelet does when given none; clients
then cannot verify it, and no client certificate can be checked either: only TokenReview tokens work.

`wanted_names` is pure; `ensure` does the files and the request through the injected `sign` callable.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from control.util import openssl

PKI_DIR = "pki"
Sign = Callable[[dict[str, Any]], str]  # the request body → the PEM certificate


@dataclass(frozen=True)
class ServingTLS:
    """What the kubelet's HTTPS server loads: its certificate and key, and the CA client certificates must
    chain to (None: no client certificate is accepted)."""

    cert_file: str
    key_file: str
    client_ca_file: str | None


def wanted_names(node_name: str, *, addresses: Iterable[str],
                 hostnames: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) the certificate must name: the node name and host names, and every
    specific address (the unspecified ones, 0.0.0.0 and ::, name nothing)."""
    dns = list(dict.fromkeys([node_name, *(h.lower() for h in hostnames if h)]))
    ips: list[str] = []
    for text in addresses:
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            continue
        if not address.is_unspecified and str(address) not in ips:
            ips.append(str(address))
    return dns, ips


def _alt_names(dns: list[str], ips: list[str]) -> set[str]:
    return {f"DNS:{name}" for name in dns} | {openssl.normal(f"IP:{ip}") for ip in ips}


def host_names() -> list[str]:
    """This host's name when it is a usable DNS name (lower case)."""
    name = socket.gethostname().lower()
    return [name] if name and all(c.isalnum() or c in "-." for c in name) else []


def ensure(state_dir: str, node_name: str, *, addresses: Iterable[str], ca_file: str | None, sign: Sign,
           hostnames: Iterable[str] = ()) -> ServingTLS:
    """The serving certificate and key under `state_dir/pki`, asked for through `sign` when the kept one does
    not chain to `ca_file` or lacks a name; self-signed when there is no CA (see the module notes)."""
    directory = os.path.join(state_dir, PKI_DIR)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    cert, key = os.path.join(directory, "kubelet.crt"), os.path.join(directory, "kubelet.key")
    dns, ips = wanted_names(node_name, addresses=addresses, hostnames=hostnames)
    extensions = ("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                  f"extendedKeyUsage=serverAuth\nsubjectAltName={','.join(sorted(_alt_names(dns, ips)))}\n")
    subject = f"/O=system:nodes/CN=system:node:{node_name}"
    if os.path.exists(cert) and os.path.exists(key) and _alt_names(dns, ips) <= openssl.alt_names(cert) and (
            ca_file is None or openssl.verifies(cert, ca_file)):
        return ServingTLS(cert, key, ca_file)
    old_umask = os.umask(0o077)
    try:
        with tempfile.TemporaryDirectory(dir=directory) as work:
            if ca_file is None:
                openssl.run("req", "-x509", *openssl.EC_KEY, "-keyout", key, "-out", f"{cert}.tmp", "-days", "365",
                            "-subj", subject, "-extensions", "v3_req", "-config", _config(work, extensions))
            else:
                csr = os.path.join(work, "kubelet.csr")
                if os.path.exists(key):
                    openssl.run("req", "-new", "-key", key, "-out", csr, "-subj", subject)
                else:
                    openssl.run("req", "-new", *openssl.EC_KEY, "-keyout", key, "-out", csr, "-subj", subject)
                with open(csr, encoding="ascii") as handle:
                    pem = sign({"nodeName": node_name, "hostnames": dns[1:], "addresses": ips, "csr": handle.read()})
                with open(f"{cert}.tmp", "w", encoding="ascii") as handle:
                    handle.write(pem)
        os.replace(f"{cert}.tmp", cert)
    finally:
        os.umask(old_umask)
    return ServingTLS(cert, key, ca_file)


def _config(work: str, extensions: str) -> str:
    """A minimal openssl config whose v3_req section holds `extensions` (for `req -x509`)."""
    path = os.path.join(work, "openssl.cnf")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("[req]\ndistinguished_name = dn\n[dn]\n[v3_req]\n" + extensions)
    return path
