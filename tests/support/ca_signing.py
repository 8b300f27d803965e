"""Certificates for tests: a kubelet-serving `Sign` for tests that run a kubelet's HTTPS API without a controller
manager (the request is issued straight from the cluster CA's files, as the csrsigning controller would once it
is approved, control/controllers/certificates/authority.py), and the real certificate controllers for tests
whose agents join through CertificateSigningRequests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from control.client.kubeconfig import ClientConfig, load_kubeconfig
from control.controllers.certificates import authority, decisions, request
from control.controllers.manager import CONTROLLERS, ControllerManager, ControllerManagerConfiguration
from nodeagent import csr


class CASigner:
    """Signs serving requests with the CA under `tls_dir` (a server's DIR/tls); `requests` counts them."""

    def __init__(self, tls_dir: str) -> None:
        self.authority = authority.Authority(os.path.join(tls_dir, "ca.crt"), os.path.join(tls_dir, "ca.key"))
        self.requests: list[bytes] = []

    @property
    def ca_path(self) -> str:
        return self.authority.cert_file

    def __call__(self, pem: bytes) -> bytes:
        self.requests.append(pem)
        return authority.issue(self.authority, pem, request.parse(pem), csr.SERVING_USAGES, now=datetime.now(UTC),
                               duration=decisions.DEFAULT_DURATION, ca_not_after=self.authority.not_after()).encode()


@contextmanager
def certificate_controllers(kubeconfig: str, tls_dir: str) -> Iterator[ControllerManager]:
    """The csrsigning and csrapproving controllers against a test's API server (its admin kubeconfig and its
    DIR/tls), stopped at the end of the `with` block: what answers agents' CertificateSigningRequests."""
    settings = ControllerManagerConfiguration(cluster_signing_cert_file=os.path.join(tls_dir, "ca.crt"),
                                              cluster_signing_key_file=os.path.join(tls_dir, "ca.key"))
    manager = ControllerManager(load_kubeconfig(kubeconfig), settings=settings,
                                controllers={name: CONTROLLERS[name] for name in ("csrsigning", "csrapproving")})
    manager.start()
    try:
        yield manager
    finally:
        manager.stop()


def node_client_config(server: str, tls_dir: str, node_name: str, directory: str) -> ClientConfig:
    """A ClientConfig as node `node_name` (`system:node:<name>`, `system:nodes`), its certificate issued straight
    from the CA under `tls_dir` (what the join through a CSR ends with) into `directory`."""
    ca = authority.Authority(os.path.join(tls_dir, "ca.crt"), os.path.join(tls_dir, "ca.key"))
    key, cert = os.path.join(directory, f"{node_name}.key"), os.path.join(directory, f"{node_name}.crt")
    csr.make_key(key)
    pem = csr.certificate_request(key, csr.node_subject(node_name))
    issued = authority.issue(ca, pem, request.parse(pem), csr.CLIENT_USAGES, now=datetime.now(UTC),
                             duration=decisions.DEFAULT_DURATION, ca_not_after=ca.not_after())
    with open(cert, "w", encoding="ascii") as handle:
        handle.write(issued)
    return ClientConfig(server=server, ca_file=ca.cert_file, cert_file=cert, key_file=key)
