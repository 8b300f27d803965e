"""Component credentials (slimkube/componentcreds.py): the subject each component's certificate carries, the
kubeconfig naming it, and the files really issued by a CA with openssl (kept, or issued again for a new CA)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from control.apiserver.authentication import certs
from slimkube import componentcreds
from slimkube.componentcreds import KUBE_CONTROLLER_MANAGER, KUBE_PROXY, KUBE_SCHEDULER, Component


@pytest.mark.parametrize("component, expected", [
    pytest.param(KUBE_SCHEDULER, "/CN=system:kube-scheduler", id="scheduler"),
    pytest.param(KUBE_CONTROLLER_MANAGER, "/CN=system:kube-controller-manager", id="controller-manager"),
    pytest.param(KUBE_PROXY, "/CN=system:kube-proxy", id="kube-proxy"),
    pytest.param(componentcreds.controller_component("deployment-controller"),
                 "/O=system:serviceaccounts/O=system:serviceaccounts:kube-system"
                 "/CN=system:serviceaccount:kube-system:deployment-controller", id="controller-as-service-account"),
])
def test_the_subject_names_the_upstream_user_and_groups(component: Component, expected: str) -> None:
    assert componentcreds.subject(component) == expected


@pytest.mark.parametrize("user", ["", "a/b", "CN=x"])
def test_a_user_that_cannot_be_a_subject_is_refused(user: str) -> None:
    with pytest.raises(ValueError):
        componentcreds.subject(Component("x", user))


def test_the_kubeconfig_has_kubeadms_shape() -> None:
    document = componentcreds.kubeconfig_document("https://127.0.0.1:6443", "/d/tls/ca.crt", "/d/tls/c.crt",
                                                  "/d/tls/c.key", "system:kube-scheduler")
    assert document["current-context"] == "system:kube-scheduler@slimkube"
    assert document["users"] == [{"name": "system:kube-scheduler", "user": {
        "client-certificate": "/d/tls/c.crt", "client-key": "/d/tls/c.key"}}]
    assert document["clusters"][0]["cluster"] == {"server": "https://127.0.0.1:6443",
                                                  "certificate-authority": "/d/tls/ca.crt"}


def subject_of(cert: str) -> str:
    return subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-subject", "-nameopt", "compat"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_certificates_are_issued_by_the_ca_kept_and_issued_again_for_a_new_ca(tmp_path: Path) -> None:
    serving = certs.ensure_serving_certs(str(tmp_path), bind_address="127.0.0.1", service_ip="10.96.0.1")
    config = componentcreds.ensure_kubeconfig(serving, str(tmp_path), "https://127.0.0.1:6443", KUBE_SCHEDULER)
    assert config.server == "https://127.0.0.1:6443" and config.ca_file == serving.ca_path
    assert config.cert_file is not None and config.key_file is not None and config.token is None
    assert subject_of(config.cert_file) == "subject=/CN=system:kube-scheduler"
    assert subprocess.run(["openssl", "verify", "-CAfile", serving.ca_path, "-purpose", "sslclient",
                           config.cert_file], capture_output=True, check=False).returncode == 0
    kubeconfig = tmp_path / "scheduler.kubeconfig"
    assert yaml.safe_load(kubeconfig.read_text())["users"][0]["name"] == "system:kube-scheduler"
    for path in (kubeconfig, Path(config.cert_file), Path(config.key_file)):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path

    issued = Path(config.cert_file).read_bytes()
    componentcreds.ensure_kubeconfig(serving, str(tmp_path), "https://127.0.0.1:6443", KUBE_SCHEDULER)
    assert Path(config.cert_file).read_bytes() == issued  # kept across restarts

    later = os.path.getmtime(config.cert_file) + 10  # a CA made after the certificate: issue it again
    os.utime(serving.ca_path, (later, later))
    componentcreds.ensure_kubeconfig(serving, str(tmp_path), "https://127.0.0.1:6443", KUBE_SCHEDULER)
    assert Path(config.cert_file).read_bytes() != issued
