"""A throwaway CA and a serving certificate it signs, made with the `openssl` command (webhook servers in
tests bring their own CA, as real ones do)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class ServingCert:
    ca: str  # paths
    cert: str
    key: str

    def ca_pem(self) -> bytes:
        with open(self.ca, "rb") as handle:
            return handle.read()


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make(directory: str, *, dns: tuple[str, ...] = ("localhost",),
         ips: tuple[str, ...] = ("127.0.0.1",)) -> ServingCert:
    """A CA (`ca.crt`) and a certificate for `dns` and `ips` (`tls.crt`, `tls.key`) in `directory`."""
    os.makedirs(directory, exist_ok=True)
    ca_key, ca = os.path.join(directory, "ca.key"), os.path.join(directory, "ca.crt")
    key, csr, cert = (os.path.join(directory, n) for n in ("tls.key", "tls.csr", "tls.crt"))
    ext = os.path.join(directory, "san.ext")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
             "-subj", "/CN=webhook-test-ca")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={dns[0]}")
    names = [f"DNS:{d}" for d in dns] + [f"IP:{i}" for i in ips]
    with open(ext, "w", encoding="utf-8") as handle:
        handle.write(f"subjectAltName={','.join(names)}\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2",
             "-extfile", ext)
    return ServingCert(ca, cert, key)
