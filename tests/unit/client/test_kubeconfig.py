"""Kubeconfig loading: contexts, tokens and token files, *-data decoded to private files, relative paths."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest
import yaml

from control.client.kubeconfig import ClientConfig, KubeconfigError, load_kubeconfig

CA = b"-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"


def write(path: Path, doc: dict) -> str:
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def kubeconfig(**overrides) -> dict:
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": "main",
        "clusters": [
            {"name": "c1", "cluster": {"server": "https://127.0.0.1:6443/",
                                       "certificate-authority-data": base64.b64encode(CA).decode()}},
            {"name": "c2", "cluster": {"server": "https://127.0.0.2:6443", "certificate-authority": "ca.crt",
                                       "insecure-skip-tls-verify": True}},
        ],
        "users": [
            {"name": "admin", "user": {"token": "t0k3n"}},
            {"name": "node", "user": {"tokenFile": "token", "client-certificate": "/abs/client.crt",
                                      "client-key-data": base64.b64encode(b"KEY").decode()}},
        ],
        "contexts": [
            {"name": "main", "context": {"cluster": "c1", "user": "admin"}},
            {"name": "other", "context": {"cluster": "c2", "user": "node"}},
        ],
    }
    doc.update(overrides)
    return doc


def test_current_context_with_token_and_embedded_ca(tmp_path):
    config = load_kubeconfig(write(tmp_path / "kc", kubeconfig()))
    assert config.server == "https://127.0.0.1:6443" and config.token == "t0k3n" and not config.insecure
    assert config.cert_file is None and config.key_file is None
    assert Path(config.ca_file).read_bytes() == CA
    assert stat.S_IMODE(os.stat(config.ca_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(config.ca_file)).st_mode) == 0o700
    assert load_kubeconfig(str(tmp_path / "kc")).ca_file == config.ca_file  # same content, same file


def test_named_context_token_file_relative_paths_and_key_data(tmp_path):
    (tmp_path / "token").write_text("from-file\n")
    config = load_kubeconfig(write(tmp_path / "kc", kubeconfig()), context="other")
    assert config == ClientConfig(server="https://127.0.0.2:6443", token="from-file",
                                  ca_file=str(tmp_path / "ca.crt"), cert_file="/abs/client.crt",
                                  key_file=config.key_file, insecure=True)
    assert Path(config.key_file).read_bytes() == b"KEY"


@pytest.mark.parametrize("doc", [
    pytest.param(kubeconfig(**{"current-context": ""}), id="no-current-context"),
    pytest.param(kubeconfig(**{"current-context": "missing"}), id="unknown-context"),
    pytest.param(kubeconfig(clusters=[]), id="unknown-cluster"),
    pytest.param(kubeconfig(clusters=[{"name": "c1", "cluster": {}}]), id="no-server"),
])
def test_unusable_kubeconfigs_are_refused(tmp_path, doc):
    with pytest.raises(KubeconfigError):
        load_kubeconfig(write(tmp_path / "kc", doc))
