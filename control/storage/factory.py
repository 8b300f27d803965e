"""`--datastore URL` → a `Storage` (the `slimkube server` flag, docs/operations.md; k3s pkg/cluster picks
kine's driver from `--datastore-endpoint` the same way).

Accepted forms:
- `sqlite://` — the embedded default, `{data_dir}/state.db`;
- `sqlite:///abs/path.db` — SQLite at an absolute path;
- `etcd://host:port` — an etcd cluster member, reached over plain HTTP (port 2379 when omitted).
TLS to etcd (`etcd+https://`) is not supported yet and is refused rather than silently downgraded.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from control.storage.etcd import EtcdStorage
from control.storage.interface import Storage
from control.storage.sqlite import SQLiteStorage

ACCEPTED = "sqlite:// (DATA_DIR/state.db), sqlite:///absolute/path.db, etcd://host:port"


def open_storage(url: str, *, data_dir: str) -> Storage:
    """Open the backend `url` names; ValueError naming the accepted forms for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # e.g. a port that is not a number
        raise ValueError(f"bad datastore URL {url!r} ({exc}); accepted: {ACCEPTED}") from None
    if parts.query or parts.fragment:
        raise ValueError(f"bad datastore URL {url!r}: no query or fragment expected; accepted: {ACCEPTED}")
    if parts.scheme == "sqlite":
        if parts.netloc:
            raise ValueError(f"bad datastore URL {url!r}: a SQLite path must be absolute "
                             f"(sqlite:///abs/path.db); accepted: {ACCEPTED}")
        path = parts.path or os.path.join(os.path.abspath(data_dir), "state.db")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return SQLiteStorage(path)
    if parts.scheme == "etcd":
        if not parts.hostname or parts.path not in ("", "/") or parts.username or parts.password:
            raise ValueError(f"bad datastore URL {url!r}: expected etcd://host:port; accepted: {ACCEPTED}")
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        return EtcdStorage(f"http://{host}:{port or 2379}")
    if parts.scheme in ("etcd+https", "etcds", "https"):
        raise ValueError(f"datastore URL {url!r}: TLS to etcd is not supported yet; accepted: {ACCEPTED}")
    raise ValueError(f"bad datastore URL {url!r}; accepted: {ACCEPTED}")
