"""The cluster CA issuing a certificate for an approved request (upstream: pkg/controller/certificates/authority
CertificateAuthority.Sign, which the csrsigning controller calls).

As upstream: the subject and subjectAltNames are the request's, the key usages are the CSR object's
`spec.usages` (not whatever extensions the request carries), CA:FALSE, notBefore backdated five minutes
for clocks that lag, notAfter the requested duration but never past the CA's own notAfter. Issued with
`openssl ca` (which takes exact start and end dates; `openssl x509 -req` only whole days) in a scratch
directory, so nothing but the CA files is shared between signings.
"""

from __future__ import annotations

import os
import ssl
import subprocess
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from control.controllers.certificates.request import ParsedRequest
from control.util import openssl

BACKDATE = timedelta(minutes=5)
KEY_USAGES = {"digital signature": "digitalSignature", "key encipherment": "keyEncipherment",
              "content commitment": "nonRepudiation", "data encipherment": "dataEncipherment",
              "key agreement": "keyAgreement", "cert sign": "keyCertSign", "crl sign": "cRLSign",
              "encipher only": "encipherOnly", "decipher only": "decipherOnly"}
EXTENDED_USAGES = {"server auth": "serverAuth", "client auth": "clientAuth", "code signing": "codeSigning",
                   "email protection": "emailProtection", "timestamping": "timeStamping",
                   "ocsp signing": "OCSPSigning"}
_CONFIG = """[ca]
default_ca = signer
[signer]
database = {work}/index.txt
new_certs_dir = {work}
certificate = {cert}
private_key = {key}
rand_serial = yes
default_md = sha256
policy = anything
unique_subject = no
copy_extensions = none
email_in_dn = no
[anything]
"""


@dataclass(frozen=True)
class Authority:
    """The CA's certificate and key files (upstream --cluster-signing-cert-file / --cluster-signing-key-file)."""

    cert_file: str
    key_file: str

    def not_after(self) -> datetime:
        text = openssl.run("x509", "-in", self.cert_file, "-noout", "-enddate").strip().partition("=")[2]
        return datetime.fromtimestamp(ssl.cert_time_to_seconds(text), UTC)

    def ca_pem(self) -> str:
        with open(self.cert_file, encoding="ascii") as handle:
            return handle.read()


def extensions(request: ParsedRequest, usages: Collection[str]) -> str:
    """The openssl extfile for a certificate with `usages` and the request's subjectAltNames."""
    lines = ["basicConstraints=critical,CA:FALSE"]
    key_usage = [KEY_USAGES[u] for u in sorted(usages) if u in KEY_USAGES]
    if key_usage:
        lines.append("keyUsage=critical," + ",".join(key_usage))
    extended = [EXTENDED_USAGES[u] for u in sorted(usages) if u in EXTENDED_USAGES]
    if extended:
        lines.append("extendedKeyUsage=" + ",".join(extended))
    names = ([f"DNS:{n}" for n in request.dns_names] + [f"IP:{a}" for a in request.ip_addresses]
             + [f"email:{e}" for e in request.emails] + [f"URI:{u}" for u in request.uris])
    if names:
        lines.append("subjectAltName=" + ",".join(names))
    return "\n".join(lines) + "\n"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y%m%d%H%M%SZ")


def issue(authority: Authority, csr_pem: bytes, request: ParsedRequest, usages: Collection[str], *,
          now: datetime, duration: timedelta, ca_not_after: datetime) -> str:
    """The PEM certificate for `csr_pem` (already parsed and checked as `request`); `now`, `ca_not_after` UTC."""
    not_after = min(now + duration, ca_not_after)
    with tempfile.TemporaryDirectory() as work:
        config, ext, csr, out = (os.path.join(work, name) for name in ("ca.cnf", "cert.ext", "req.csr", "cert.pem"))
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(_CONFIG.format(work=work, cert=authority.cert_file, key=authority.key_file))
        with open(os.path.join(work, "index.txt"), "w", encoding="utf-8"):
            pass
        with open(ext, "w", encoding="utf-8") as handle:
            handle.write(extensions(request, usages))
        with open(csr, "wb") as handle:
            handle.write(csr_pem)
        result = subprocess.run(["openssl", "ca", "-batch", "-notext", "-preserveDN", "-config", config,
                                 "-in", csr, "-out", out, "-extfile", ext,
                                 "-startdate", _stamp(now - BACKDATE), "-enddate", _stamp(not_after)],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise openssl.OpenSSLError(f"openssl ca failed: {result.stderr.strip()}")
        with open(out, encoding="ascii") as handle:
            return handle.read()
