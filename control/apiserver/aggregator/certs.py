"""The front proxy's CA and client certificate (upstream kube-apiserver's `--requestheader-client-ca-file`,
`--requestheader-allowed-names`, `--proxy-client-cert-file`/`--proxy-client-key-file`, as kubeadm makes
them: `front-proxy-ca` and `front-proxy-client`).

Made on first start in `DIR/tls/` with the openssl tool, kept across restarts: `front-proxy-ca.{crt,key}`,
a CA of its own (an extension API server trusts the identity headers only from a client certificate this CA
signed, never from a cluster client certificate), and `front-proxy-client.{crt,key}` (CN `front-proxy-client`,
clientAuth), which the aggregator presents to every aggregated API server. The `kube-system/
extension-apiserver-authentication` ConfigMap (`authentication_config`) tells those servers what to trust.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from typing import Any

from control.util import openssl
from control.util.openssl import EC_KEY

_DAYS = "3650"
CLIENT_NAME = "front-proxy-client"
USER_HEADER, GROUP_HEADER, EXTRA_PREFIX = "X-Remote-User", "X-Remote-Group", "X-Remote-Extra-"


@dataclass(frozen=True)
class FrontProxyCerts:
    ca_path: str
    cert_path: str
    key_path: str

    def ca_pem(self) -> str:
        with open(self.ca_path, encoding="utf-8") as handle:
            return handle.read()


def ensure_front_proxy_certs(data_dir: str) -> FrontProxyCerts:
    """The front proxy's CA and client certificate under `data_dir/tls`, made when missing."""
    directory = os.path.join(data_dir, "tls")
    certs = FrontProxyCerts(*(os.path.join(directory, name) for name in (
        "front-proxy-ca.crt", f"{CLIENT_NAME}.crt", f"{CLIENT_NAME}.key")))
    ca_key = os.path.join(directory, "front-proxy-ca.key")
    if all(os.path.exists(p) for p in (certs.ca_path, ca_key, certs.cert_path, certs.key_path)):
        return certs
    os.makedirs(directory, mode=0o700, exist_ok=True)
    old_umask = os.umask(0o077)
    try:
        with tempfile.TemporaryDirectory(dir=directory) as work:
            csr, ext = os.path.join(work, "client.csr"), os.path.join(work, "client.ext")
            with open(ext, "w", encoding="utf-8") as handle:
                handle.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                             "extendedKeyUsage=clientAuth\n")
            openssl.run("req", "-x509", *EC_KEY, "-keyout", ca_key, "-out", certs.ca_path, "-days", _DAYS,
                        "-subj", f"/CN=front-proxy-ca@{int.from_bytes(os.urandom(4), 'big')}",
                        "-addext", "basicConstraints=critical,CA:TRUE",
                        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")
            openssl.run("req", "-new", *EC_KEY, "-keyout", certs.key_path, "-out", csr, "-subj", f"/CN={CLIENT_NAME}")
            openssl.run("x509", "-req", "-in", csr, "-CA", certs.ca_path, "-CAkey", ca_key, "-CAcreateserial",
                        "-out", certs.cert_path, "-days", _DAYS, "-sha256", "-extfile", ext)
    finally:
        os.umask(old_umask)
    return certs


def authentication_config(certs: FrontProxyCerts, client_ca_pem: str) -> dict[str, Any]:
    """upstream's `kube-system/extension-apiserver-authentication` ConfigMap (ClusterAuthenticationInfo)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
            "data": {"client-ca-file": client_ca_pem,
                     "requestheader-client-ca-file": certs.ca_pem(),
                     "requestheader-allowed-names": json.dumps([CLIENT_NAME]),
                     "requestheader-username-headers": json.dumps([USER_HEADER]),
                     "requestheader-group-headers": json.dumps([GROUP_HEADER]),
                     "requestheader-extra-headers-prefix": json.dumps([EXTRA_PREFIX])}}
