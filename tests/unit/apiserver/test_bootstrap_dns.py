"""control/apiserver/controlplane/bootstrap.py: the `kube-system/kube-dns` Service on the service CIDR's tenth address,
made once, and left alone when the address is already another Service's."""

from __future__ import annotations

from control.apiserver.controlplane.bootstrap import SERVICES, bootstrap, cluster_dns_ip
from control.apiserver.registry.store import DeleteOptions, Registry
from control.storage.sqlite import SQLiteStorage


def test_kube_dns_service_on_the_tenth_address(tmp_path):
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        registry = Registry(storage, service_cidr="10.100.0.0/16")
        bootstrap(registry, api_port=6443)
        service = registry.get(SERVICES, "kube-system", "kube-dns")
        assert service is not None and service["spec"]["clusterIP"] == "10.100.0.10" == cluster_dns_ip("10.100.0.0/16")
        assert service["spec"]["internalTrafficPolicy"] == "Local" and "selector" not in service["spec"]
        assert [(p["name"], p["port"], p["protocol"]) for p in service["spec"]["ports"]] == [
            ("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"), ("metrics", 9153, "TCP")]
        bootstrap(registry, api_port=6443)  # again: kept as it is
        assert registry.get(SERVICES, "kube-system", "kube-dns")["metadata"]["uid"] == service["metadata"]["uid"]
    finally:
        storage.close()


def test_tenth_address_taken_leaves_no_kube_dns(tmp_path):
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        registry = Registry(storage)
        bootstrap(registry, api_port=6443)
        registry.delete(SERVICES, "kube-system", "kube-dns", DeleteOptions())
        registry.create(SERVICES, "default", {"metadata": {"name": "squatter"},
                                              "spec": {"clusterIP": "10.96.0.10", "ports": [{"port": 80}]}})
        bootstrap(registry, api_port=6443)
        assert registry.get(SERVICES, "kube-system", "kube-dns") is None
    finally:
        storage.close()
