"""Encryption at rest on a real API server: with an EncryptionConfiguration, a Secret's value is in neither
the SQLite file (live rows and history) nor etcd's raw keys; a restart with a rotated key list (new key first,
old key second) still reads it; `kubectl get secrets -A -o json | kubectl replace -f -` rewrites it with the
new key, after which the old key can go."""

from __future__ import annotations

import base64
import os
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml

from tests.conftest import unavailable
from tests.support.apiserver import Endpoint, running_server
from tests.support.etcd import ETCD, etcd_binary, running_etcd

KEY1 = base64.b64encode(b"1" * 32).decode()
KEY2 = base64.b64encode(b"2" * 32).decode()
KUBECTL = "/usr/bin/kubectl"


def write_config(path: Path, providers: list[dict]) -> str:
    path.write_text(yaml.safe_dump({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
                                    "resources": [{"resources": ["secrets"], "providers": providers}]}))
    return str(path)


def aesgcm(*names_and_secrets: tuple[str, str]) -> dict:
    return {"aesgcm": {"keys": [{"name": name, "secret": secret} for name, secret in names_and_secrets]}}


def create_secret(api: Endpoint, marker: str) -> str:
    name = f"enc-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "data": {"password": base64.b64encode(marker.encode()).decode()}}
    response = api.request("POST", "/api/v1/namespaces/default/secrets", json=body)
    assert response.status_code == 201, response.text
    return name


def read_secret(api: Endpoint, name: str) -> str:
    response = api.request("GET", f"/api/v1/namespaces/default/secrets/{name}")
    assert response.status_code == 200, response.text
    return base64.b64decode(response.json()["data"]["password"]).decode()


def store_bytes(data_dir: Path) -> bytes:
    return b"".join(path.read_bytes() for path in data_dir.glob("state.db*"))


def latest_value(data_dir: Path, name: str) -> bytes:
    with sqlite3.connect(data_dir / "state.db") as db:
        [(value,)] = db.execute("SELECT value FROM kine WHERE name = ? ORDER BY id DESC LIMIT 1",
                                (f"/registry/secrets/default/{name}",)).fetchall()
    return bytes(value)


def kubectl_replace_all(api: Endpoint, home: Path) -> None:
    if not os.access(KUBECTL, os.X_OK):
        unavailable("kubectl", f"{KUBECTL} is missing (run ./install.sh)")
    env = {**os.environ, "HOME": str(home)}
    listed = subprocess.run([KUBECTL, f"--kubeconfig={api.kubeconfig}", "get", "secrets", "-A", "-o", "json"],
                            capture_output=True, text=True, env=env, timeout=60, check=True)
    replaced = subprocess.run([KUBECTL, f"--kubeconfig={api.kubeconfig}", "replace", "-f", "-"],
                              input=listed.stdout, capture_output=True, text=True, env=env, timeout=60)
    assert replaced.returncode == 0, replaced.stderr


def test_sqlite_holds_no_plaintext_and_rotation_keeps_reading(tmp_path: Path) -> None:
    data = tmp_path / "data"
    marker = f"hunter2-{uuid.uuid4().hex}"
    first = write_config(tmp_path / "first.yaml", [aesgcm(("key1", KEY1)), {"identity": {}}])
    with running_server(str(data), encryption_provider_config=first) as api:
        name = create_secret(api, marker)
        update = api.request("PATCH", f"/api/v1/namespaces/default/secrets/{name}",
                             json={"metadata": {"labels": {"touched": "yes"}}},
                             headers={"Content-Type": "application/merge-patch+json"})
        assert update.status_code == 200, update.text  # a history row now holds the first value too
        assert read_secret(api, name) == marker
    raw = store_bytes(data)
    assert marker.encode() not in raw and base64.b64encode(marker.encode()) not in raw
    assert latest_value(data, name).startswith(b"k8s:enc:aesgcm:v1:key1:")
    with sqlite3.connect(data / "state.db") as db:
        rows = db.execute("SELECT value, old_value FROM kine WHERE name = ?",
                          (f"/registry/secrets/default/{name}",)).fetchall()
    assert len(rows) == 2 and all(v.startswith(b"k8s:enc:") for row in rows for v in row if v is not None)

    rotated = write_config(tmp_path / "rotated.yaml", [aesgcm(("key2", KEY2), ("key1", KEY1)), {"identity": {}}])
    with running_server(str(data), encryption_provider_config=rotated) as api:
        assert read_secret(api, name) == marker
        kubectl_replace_all(api, tmp_path)
        assert read_secret(api, name) == marker
    assert latest_value(data, name).startswith(b"k8s:enc:aesgcm:v1:key2:")

    only_new = write_config(tmp_path / "only-new.yaml", [aesgcm(("key2", KEY2))])
    with running_server(str(data), encryption_provider_config=only_new) as api:
        assert read_secret(api, name) == marker


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[str]:
    binary = etcd_binary()
    if binary is None:
        unavailable("etcd", f"not installed ({ETCD} missing; run ./install.sh)")
    (tmp_path / "etcd").mkdir()
    with running_etcd(tmp_path / "etcd", binary) as (endpoint, _):
        yield endpoint


def test_etcd_raw_keys_hold_no_plaintext(tmp_path: Path, etcd: str) -> None:
    marker = f"hunter2-{uuid.uuid4().hex}"
    config = write_config(tmp_path / "secretbox.yaml",
                          [{"secretbox": {"keys": [{"name": "box1", "secret": KEY1}]}}])
    with running_server(str(tmp_path / "data"), datastore=f"etcd://{etcd.removeprefix('http://')}",
                        encryption_provider_config=config) as api:
        name = create_secret(api, marker)
        assert read_secret(api, name) == marker
    key = base64.b64encode(f"/registry/secrets/default/{name}".encode()).decode()
    answer = requests.post(f"{etcd}/v3/kv/range", json={"key": key}, timeout=10).json()
    raw = base64.b64decode(answer["kvs"][0]["value"])
    assert raw.startswith(b"k8s:enc:secretbox:v1:box1:")
    assert marker.encode() not in raw and base64.b64encode(marker.encode()) not in raw
