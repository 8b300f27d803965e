"""The API server's serving certificate (upstream: k8s.io/client-go/util/cert GenerateSelfSignedCertKey and
k3s's self-signed server CA).

Why the server needs TLS at all: client-go (kubectl, every Go client) only sends the kubeconfig's
credentials over https — `clientcmd.DirectClientConfig.ClientConfig` merges the user's token only when
`IsConfigTransportTLS`, so over plain http kubectl sends no `Authorization` header and gets 401. The
admin kubeconfig is therefore only usable over https.

On first start a CA and a serving certificate signed by it are written to `DIR/tls/` (keys mode 0600)
with the `openssl` command line tool, and kept across restarts, so kubeconfigs already handed out stay
valid. The certificate names what clients dial: localhost, 127.0.0.1, the bind address, this host's
name, the advertise address (the `kubernetes` Endpoints' IP, which pods and `up --nodes`' node namespaces
dial), and the `kubernetes` Service's cluster IP and DNS names (pods reach the API through it). A kept
serving certificate that lacks one of these names (the server now advertises another address) is issued
again by the same CA, so kubeconfigs and join tokens stay valid.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
import subprocess
import tempfile
from dataclasses import dataclass

_DAYS = "3650"


@dataclass(frozen=True)
class ServingCerts:
    ca_path: str
    cert_path: str
    key_path: str

    def ca_pem(self) -> bytes:
        with open(self.ca_path, "rb") as handle:
            return handle.read()

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_path, self.key_path)
        return context


def subject_alt_names(bind_address: str, service_ip: str, extra_ips: tuple[str, ...] = ()) -> list[str]:
    names = ["DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default", "DNS:kubernetes.default.svc",
             "DNS:kubernetes.default.svc.cluster.local", "IP:127.0.0.1", "IP:::1", f"IP:{service_ip}"]
    hostname = socket.gethostname()
    if hostname and all(c.isalnum() or c in "-." for c in hostname):
        names.append(f"DNS:{hostname}")
    for candidate in (bind_address, *extra_ips):
        try:
            address = ipaddress.ip_address(candidate)
        except ValueError:
            continue
        if not address.is_unspecified:
            names.append(f"IP:{address}")
    return list(dict.fromkeys(names))


def _normal(entry: str) -> str:
    """`IP:…`/`DNS:…` in one spelling (openssl prints `IP Address:` and IPv6 addresses unabbreviated)."""
    kind, _, value = entry.strip().replace("IP Address:", "IP:").partition(":")
    return f"IP:{ipaddress.ip_address(value)}" if kind == "IP" else f"{kind}:{value}"


def _names_in(cert_path: str) -> set[str]:
    """The subjectAltName entries of a certificate, normalised by `_normal`."""
    result = subprocess.run(["openssl", "x509", "-in", cert_path, "-noout", "-ext", "subjectAltName"],
                            capture_output=True, text=True, check=False)
    entries = result.stdout.splitlines()[1:] if result.returncode == 0 else []
    return {_normal(item) for line in entries for item in line.split(",") if item.strip()}


def _openssl(*args: str) -> None:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def ensure_serving_certs(data_dir: str, *, bind_address: str, service_ip: str,
                         extra_ips: tuple[str, ...] = ()) -> ServingCerts:
    """The CA and serving certificate under `data_dir/tls`, created when missing; the serving certificate
    issued again (same CA) when it lacks a name it must have (`extra_ips`: e.g. the advertise address)."""
    directory = os.path.join(data_dir, "tls")
    certs = ServingCerts(os.path.join(directory, "ca.crt"), os.path.join(directory, "serving.crt"),
                         os.path.join(directory, "serving.key"))
    names = subject_alt_names(bind_address, service_ip, extra_ips)
    ca_key = os.path.join(directory, "ca.key")
    have_ca = os.path.exists(certs.ca_path) and os.path.exists(ca_key)
    if all(os.path.exists(p) for p in (certs.ca_path, certs.cert_path, certs.key_path)) and (
            not extra_ips or not have_ca or {_normal(n) for n in names} <= _names_in(certs.cert_path)):
        return certs
    os.makedirs(directory, mode=0o700, exist_ok=True)
    old_umask = os.umask(0o077)
    try:
        with tempfile.TemporaryDirectory(dir=directory) as work:
            csr = os.path.join(work, "serving.csr")
            ext = os.path.join(work, "serving.ext")
            with open(ext, "w", encoding="utf-8") as handle:
                handle.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                             f"extendedKeyUsage=serverAuth\nsubjectAltName={','.join(names)}\n")
            ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
            if not have_ca:
                _openssl("req", "-x509", *ec, "-keyout", ca_key, "-out", certs.ca_path, "-days", _DAYS,
                         "-subj", f"/CN=slimkube-ca@{int.from_bytes(os.urandom(4), 'big')}",
                         "-addext", "basicConstraints=critical,CA:TRUE",
                         "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")
            _openssl("req", "-new", *ec, "-keyout", certs.key_path, "-out", csr, "-subj", "/CN=kube-apiserver")
            _openssl("x509", "-req", "-in", csr, "-CA", certs.ca_path, "-CAkey", ca_key, "-CAcreateserial",
                     "-out", certs.cert_path, "-days", _DAYS, "-sha256", "-extfile", ext)
    finally:
        os.umask(old_umask)
    return certs
