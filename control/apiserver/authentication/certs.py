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

Beside them, the API server's client certificate for calling kubelets (upstream kubeadm's
`apiserver-kubelet-client`: CN kube-apiserver-kubelet-client, O system:masters, clientAuth only) in
`DIR/tls/apiserver-kubelet-client.{crt,key}`, and `sign` issues certificates from a CSR with the subject
and extensions the caller decides (control/apiserver/authentication/kubeletcerts.py: kubelet serving certificates).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
import tempfile
from dataclasses import dataclass

from control.util import openssl
from control.util.openssl import EC_KEY

_DAYS = "3650"
KUBELET_CLIENT = "apiserver-kubelet-client"
KUBELET_CLIENT_SUBJECT = "/O=system:masters/CN=kube-apiserver-kubelet-client"


@dataclass(frozen=True)
class ServingCerts:
    ca_path: str
    cert_path: str
    key_path: str

    @property
    def directory(self) -> str:
        return os.path.dirname(self.ca_path)

    @property
    def ca_key_path(self) -> str:
        return os.path.join(self.directory, "ca.key")

    @property
    def kubelet_client_cert_path(self) -> str:
        return os.path.join(self.directory, KUBELET_CLIENT + ".crt")

    @property
    def kubelet_client_key_path(self) -> str:
        return os.path.join(self.directory, KUBELET_CLIENT + ".key")

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
            not extra_ips or not have_ca or {openssl.normal(n) for n in names} <= openssl.alt_names(certs.cert_path)):
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
            if not have_ca:
                openssl.run("req", "-x509", *EC_KEY, "-keyout", ca_key, "-out", certs.ca_path, "-days", _DAYS,
                         "-subj", f"/CN=slimkube-ca@{int.from_bytes(os.urandom(4), 'big')}",
                         "-addext", "basicConstraints=critical,CA:TRUE",
                         "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")
            openssl.run("req", "-new", *EC_KEY, "-keyout", certs.key_path, "-out", csr, "-subj", "/CN=kube-apiserver")
            openssl.run("x509", "-req", "-in", csr, "-CA", certs.ca_path, "-CAkey", ca_key, "-CAcreateserial",
                     "-out", certs.cert_path, "-days", _DAYS, "-sha256", "-extfile", ext)
    finally:
        os.umask(old_umask)
    return certs


def sign(certs: ServingCerts, csr_pem: bytes, *, subject: str, extensions: str, days: str = _DAYS) -> bytes:
    """A certificate for the key of `csr_pem` (its self-signature checked by openssl), issued by the CA with
    `subject` (openssl `/O=…/CN=…` form) and `extensions` (an openssl extfile), whatever the CSR asked for."""
    with tempfile.TemporaryDirectory(dir=certs.directory) as work:
        csr, ext, out = (os.path.join(work, name) for name in ("request.csr", "request.ext", "issued.crt"))
        with open(csr, "wb") as handle:
            handle.write(csr_pem)
        with open(ext, "w", encoding="utf-8") as handle:
            handle.write(extensions)
        openssl.run("x509", "-req", "-in", csr, "-CA", certs.ca_path, "-CAkey", certs.ca_key_path, "-CAcreateserial",
                 "-out", out, "-days", days, "-sha256", "-extfile", ext, "-subj", subject)
        with open(out, "rb") as handle:
            return handle.read()


CLIENT_EXTENSIONS = ("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                     "extendedKeyUsage=clientAuth\n")


def ensure_kubelet_client_cert(certs: ServingCerts) -> None:
    """DIR/tls/apiserver-kubelet-client.{crt,key}, made once (a CA made again makes it again: it is issued
    after the CA, so a certificate older than the CA cannot be the CA's)."""
    cert, key = certs.kubelet_client_cert_path, certs.kubelet_client_key_path
    if os.path.exists(cert) and os.path.exists(key) and os.path.getmtime(cert) >= os.path.getmtime(certs.ca_path):
        return
    old_umask = os.umask(0o077)
    try:
        with tempfile.TemporaryDirectory(dir=certs.directory) as work:
            csr = os.path.join(work, "client.csr")
            openssl.run("req", "-new", *EC_KEY, "-keyout", key, "-out", csr, "-subj", KUBELET_CLIENT_SUBJECT)
            with open(csr, "rb") as handle:
                issued = sign(certs, handle.read(), subject=KUBELET_CLIENT_SUBJECT, extensions=CLIENT_EXTENSIONS)
        with open(cert, "wb") as handle:
            handle.write(issued)
    finally:
        os.umask(old_umask)
