"""Kubeconfig loading (upstream: k8s.io/client-go/tools/clientcmd — loader.go, client_config.go).

Only what a component needs to reach one API server: pick the context (`current-context` unless one is
named), then its cluster (server, CA, insecure-skip-tls-verify) and user (token or tokenFile, client
certificate and key). As clientcmd does, relative file paths are resolved against the kubeconfig's own
directory, and a `*-data` field wins over its file twin.

`requests` (and the ssl module under it) only take certificates as files, so `*-data` values are
decoded into files in one private directory per process (mode 0700, files 0600), named by the content's
hash so loading the same kubeconfig again reuses them; the directory is removed at interpreter exit.
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

import yaml


@dataclass(frozen=True)
class ClientConfig:
    """Where the API server is and how to authenticate to it."""

    server: str
    token: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure: bool = False


class KubeconfigError(ValueError):
    """The kubeconfig does not name a usable context, cluster or user."""


_data_dir: str | None = None
_data_lock = threading.Lock()


def _private_dir() -> str:
    global _data_dir
    with _data_lock:
        if _data_dir is None:
            _data_dir = tempfile.mkdtemp(prefix="slimkube-kubeconfig-")  # mkdtemp makes it 0700
            atexit.register(shutil.rmtree, _data_dir, True)
        return _data_dir


def _data_file(encoded: str, suffix: str) -> str:
    """Decode a base64 `*-data` value into a private file and return its path."""
    try:
        data = base64.b64decode(encoded, validate=False)
    except ValueError as exc:
        raise KubeconfigError(f"bad base64 in kubeconfig {suffix} data") from exc
    path = os.path.join(_private_dir(), hashlib.sha256(data).hexdigest()[:32] + suffix)
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))  # mkstemp makes it 0600
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    return path


def _named(entries: Any, name: str, what: str) -> dict[str, Any]:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry.get(what) or {}
    raise KubeconfigError(f"kubeconfig has no {what} named {name!r}")


def _file_or_data(section: dict[str, Any], field: str, base: str, suffix: str) -> str | None:
    data = section.get(f"{field}-data")
    if data:
        return _data_file(data, suffix)
    path = section.get(field)
    if path:
        return os.path.join(base, os.path.expanduser(path))
    return None


def load_kubeconfig(path: str, *, context: str | None = None) -> ClientConfig:
    """The `ClientConfig` of `context` (default: the file's current-context)."""
    with open(path, encoding="utf-8") as handle:
        doc = yaml.safe_load(handle) or {}
    if not isinstance(doc, dict):
        raise KubeconfigError(f"{path} is not a kubeconfig")
    base = os.path.dirname(os.path.abspath(path))
    name = context or doc.get("current-context")
    if not name:
        raise KubeconfigError(f"{path} has no current-context and none was given")
    ctx = _named(doc.get("contexts"), name, "context")
    cluster = _named(doc.get("clusters"), ctx.get("cluster", ""), "cluster")
    user = _named(doc.get("users"), ctx["user"], "user") if ctx.get("user") else {}
    server = cluster.get("server")
    if not server:
        raise KubeconfigError(f"cluster {ctx.get('cluster')!r} in {path} has no server")
    token = user.get("token")
    if not token and user.get("tokenFile"):
        with open(os.path.join(base, os.path.expanduser(user["tokenFile"])), encoding="utf-8") as handle:
            token = handle.read().strip()
    return ClientConfig(
        server=str(server).rstrip("/"),
        token=token or None,
        ca_file=_file_or_data(cluster, "certificate-authority", base, ".crt"),
        cert_file=_file_or_data(user, "client-certificate", base, ".crt"),
        key_file=_file_or_data(user, "client-key", base, ".key"),
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
    )
