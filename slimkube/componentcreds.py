"""Each control-plane component reaches the API server as its own upstream user, through a client certificate
the cluster CA issues at start, kept with a kubeconfig of its own in the data dir (kubeadm's
`/etc/kubernetes/scheduler.conf` and `controller-manager.conf`, k3s's `server/cred/scheduler.kubeconfig`
with `server/tls/client-scheduler.crt`): the certificate's CommonName is the user, its Organizations the
groups (control/apiserver/authentication/x509.py), and the bootstrap RBAC policy binds each user to its role
(`system:kube-scheduler`, `system:kube-controller-manager`, `system:node-proxier` for `system:kube-proxy`).

Files, all 0600: `DIR/tls/client-<name>.crt` and `.key`, `DIR/<name>.kubeconfig` naming them and the CA.
A certificate is kept across restarts and issued again when it is missing, older than the CA (a new CA) or
within `RENEW_BEFORE_DAYS` of its end (1-year leaves, as upstream's kubeadm and k3s issue them).

Each controller runs as its own service account (upstream `--use-service-account-credentials`):
`controller_component` gives the user `system:serviceaccount:kube-system:<account>` with the service
account groups, which the `system:controller:*` bindings name. Its credential is not a certificate (a
CommonName holds at most 64 characters, fewer than some of these names) but a random bearer token the
API server in the same process registers for that user (slimkube/controlplane.py): kept in memory only,
valid while that process runs. Departure: upstream hands each controller a token of the service account
itself (TokenRequest); RBAC sees the same user and groups either way.

The pure parts (`subject`, `kubeconfig_document`) decide; `ensure_kubeconfig` does the file and openssl I/O.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

import yaml

from control.apiserver.authentication import certs
from control.client.kubeconfig import ClientConfig, load_kubeconfig
from control.util import openssl
from slimkube.privatefile import write_private

LEAF_DAYS = 365
RENEW_BEFORE_DAYS = 90


@dataclass(frozen=True)
class Component:
    """A component's credential: `name` names its files, `user` and `groups` go in its certificate."""

    name: str
    user: str
    groups: tuple[str, ...] = ()


KUBE_SCHEDULER = Component("scheduler", "system:kube-scheduler")
KUBE_CONTROLLER_MANAGER = Component("controller-manager", "system:kube-controller-manager")
KUBE_PROXY = Component("kube-proxy", "system:kube-proxy")
CONTROLLER_NAMESPACE = "kube-system"


def controller_component(account: str) -> Component:
    """A controller as its service account `kube-system/<account>` (upstream's user and groups for one)."""
    return Component(f"controller-{account}", f"system:serviceaccount:{CONTROLLER_NAMESPACE}:{account}",
                     ("system:serviceaccounts", f"system:serviceaccounts:{CONTROLLER_NAMESPACE}"))


def subject(component: Component) -> str:
    """openssl's `-subj` for the component: one O per group, then the CN (x509.py reads them back)."""
    for part in (component.user, *component.groups):
        if not part or "/" in part or "=" in part:
            raise ValueError(f"{part!r} cannot be put in a certificate subject")
    return "".join(f"/O={group}" for group in component.groups) + f"/CN={component.user}"


def kubeconfig_document(server_url: str, ca_path: str, cert_path: str, key_path: str, user: str) -> dict[str, Any]:
    """kubeadm's shape: one cluster with the CA, one user with the client certificate, one context."""
    return {"apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "slimkube", "cluster": {"server": server_url, "certificate-authority": ca_path}}],
            "users": [{"name": user, "user": {"client-certificate": cert_path, "client-key": key_path}}],
            "contexts": [{"name": f"{user}@slimkube", "context": {"cluster": "slimkube", "user": user}}],
            "current-context": f"{user}@slimkube"}


def kubeconfig_path(data_dir: str, component: Component) -> str:
    return os.path.join(data_dir, f"{component.name}.kubeconfig")


def ensure_kubeconfig(serving: certs.ServingCerts, data_dir: str, server_url: str,
                      component: Component) -> ClientConfig:
    """The component's certificate (issued if needed) and kubeconfig, written; its ClientConfig as read back
    from that kubeconfig, so what runs is what the file says."""
    cert_path = os.path.join(serving.directory, f"client-{component.name}.crt")
    key_path = os.path.join(serving.directory, f"client-{component.name}.key")
    if not _current(cert_path, key_path, serving.ca_path):
        _issue(serving, component, cert_path, key_path)
    path = kubeconfig_path(data_dir, component)
    document = kubeconfig_document(server_url, serving.ca_path, cert_path, key_path, component.user)
    write_private(path, yaml.safe_dump(document, sort_keys=False))
    return load_kubeconfig(path)


def _current(cert_path: str, key_path: str, ca_path: str) -> bool:
    """Whether the kept certificate can serve on: present with its key, issued after the CA, not ending soon."""
    if not (os.path.exists(cert_path) and os.path.exists(key_path)):
        return False
    if os.path.getmtime(cert_path) < os.path.getmtime(ca_path):
        return False
    ending = subprocess.run(["openssl", "x509", "-in", cert_path, "-noout", "-checkend",
                             str(RENEW_BEFORE_DAYS * 86400)], capture_output=True, check=False)
    return ending.returncode == 0


def _issue(serving: certs.ServingCerts, component: Component, cert_path: str, key_path: str) -> None:
    old_umask = os.umask(0o077)
    try:
        with tempfile.TemporaryDirectory(dir=serving.directory) as work:
            csr = os.path.join(work, "client.csr")
            new_key = os.path.join(work, "client.key")
            openssl.run("req", "-new", *openssl.EC_KEY, "-keyout", new_key, "-out", csr, "-subj", subject(component))
            with open(csr, "rb") as handle:
                issued = certs.sign(serving, handle.read(), subject=subject(component),
                                    extensions=certs.CLIENT_EXTENSIONS, days=str(LEAF_DAYS))
            os.replace(new_key, key_path)
        write_private(cert_path, issued.decode())
    finally:
        os.umask(old_umask)
