"""The `openssl` command line tool, shared by the API server's certificates
(control/apiserver/authentication/certs.py) and the kubelet's serving certificate (nodeagent/servingcert.py): no
Python crypto dependency is needed for making keys, CSRs and certificates, and openssl is on every machine that
runs Docker."""

from __future__ import annotations

import ipaddress
import subprocess

EC_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


class OpenSSLError(RuntimeError):
    """openssl exited non-zero; the message is its stderr."""


def run(*args: str) -> str:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise OpenSSLError(f"openssl {args[0]} failed: {result.stderr.strip()}")
    return result.stdout


def normal(entry: str) -> str:
    """`IP:…`/`DNS:…` in one spelling (openssl prints `IP Address:` and IPv6 addresses unabbreviated)."""
    kind, _, value = entry.strip().replace("IP Address:", "IP:").partition(":")
    return f"IP:{ipaddress.ip_address(value)}" if kind == "IP" else f"{kind}:{value}"


def alt_names(cert_path: str) -> set[str]:
    """The subjectAltName entries of a certificate, normalised by `normal` (empty when unreadable)."""
    result = subprocess.run(["openssl", "x509", "-in", cert_path, "-noout", "-ext", "subjectAltName"],
                            capture_output=True, text=True, check=False)
    entries = result.stdout.splitlines()[1:] if result.returncode == 0 else []
    return {normal(item) for line in entries for item in line.split(",") if item.strip()}


def verifies(cert_path: str, ca_path: str) -> bool:
    """Whether `cert_path` chains to `ca_path` and is valid now."""
    result = subprocess.run(["openssl", "verify", "-CAfile", ca_path, cert_path], capture_output=True, text=True,
                            check=False)
    return result.returncode == 0
