"""control/apiserver/controlplane/master_endpoints.py: the `kubernetes` Endpoints object, the advertised address
(--advertise-address, a specific --bind-address, else the default route's interface) and the reconcile
that writes only when the object differs."""

from __future__ import annotations

import pytest

from control.apiserver.controlplane import master_endpoints
from control.apiserver.controlplane.bootstrap import bootstrap
from control.apiserver.controlplane.master_endpoints import advertise_address, choose_address
from control.apiserver.controlplane.master_endpoints import master_endpoints as build
from control.apiserver.registry.store import Registry
from control.storage.sqlite import SQLiteStorage

ROUTES = """Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
"""


@pytest.mark.parametrize(("interfaces", "routes", "expected"), [
    pytest.param({"lo": ["127.0.0.1"], "docker0": ["172.17.0.1"], "eth0": ["192.0.2.10"], "wlan0": ["192.168.1.5"]},
                 ROUTES, "192.0.2.10", id="lowest-metric-default-route"),
    pytest.param({"lo": ["127.0.0.1"], "eth0": ["169.254.1.1"], "ens3": ["10.1.2.3"]}, "", "10.1.2.3",
                 id="no-default-route-first-usable"),
    pytest.param({"lo": ["127.0.0.1"]}, ROUTES, None, id="only-loopback"),
])
def test_choose_address(interfaces, routes, expected):
    assert choose_address(interfaces, routes) == expected


@pytest.mark.parametrize(("advertise", "bind", "expected"), [
    pytest.param("10.0.0.9", "0.0.0.0", "10.0.0.9", id="explicit"),
    pytest.param(None, "10.0.0.5", "10.0.0.5", id="specific-bind"),
    pytest.param(None, "127.0.0.1", "127.0.0.1", id="loopback-bind"),
    pytest.param(None, "0.0.0.0", "192.0.2.10", id="unspecified-bind-host-address"),
    pytest.param(None, "::", "192.0.2.10", id="unspecified-v6-bind"),
])
def test_advertise_address(advertise, bind, expected):
    assert advertise_address(advertise=advertise, bind_address=bind, host_address=lambda: "192.0.2.10") == expected


def test_reconcile_creates_rewrites_and_otherwise_leaves_it(tmp_path):
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        registry = Registry(storage)
        bootstrap(registry, api_port=6443)
        assert master_endpoints.reconcile(registry, ip="192.0.2.10", port=6443)
        stored = registry.get(master_endpoints.ENDPOINTS, "default", "kubernetes")
        assert stored is not None and stored["subsets"] == build("192.0.2.10", 6443)["subsets"]
        assert stored["subsets"][0]["ports"] == [{"name": "https", "port": 6443, "protocol": "TCP"}]
        assert not master_endpoints.reconcile(registry, ip="192.0.2.10", port=6443)
        assert master_endpoints.reconcile(registry, ip="192.0.2.11", port=6443)
        moved = registry.get(master_endpoints.ENDPOINTS, "default", "kubernetes")
        assert moved["subsets"][0]["addresses"] == [{"ip": "192.0.2.11"}]
        assert moved["metadata"]["uid"] == stored["metadata"]["uid"]
    finally:
        storage.close()


def test_reconcile_keeps_the_kubernetes_endpointslice_beside_the_endpoints(tmp_path):
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        registry = Registry(storage)
        bootstrap(registry, api_port=6443)
        assert master_endpoints.reconcile(registry, ip="192.0.2.10", port=6443)
        slice_ = registry.get(master_endpoints.ENDPOINT_SLICES, "default", "kubernetes")
        assert slice_ is not None and slice_["addressType"] == "IPv4"
        assert slice_["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
        assert slice_["endpoints"] == [{"addresses": ["192.0.2.10"], "conditions": {"ready": True}}]
        assert slice_["ports"] == [{"name": "https", "port": 6443, "protocol": "TCP"}]
        assert not master_endpoints.reconcile(registry, ip="192.0.2.10", port=6443)
        assert master_endpoints.reconcile(registry, ip="192.0.2.11", port=6443)
        moved = registry.get(master_endpoints.ENDPOINT_SLICES, "default", "kubernetes")
        assert moved["endpoints"][0]["addresses"] == ["192.0.2.11"]
        assert moved["metadata"]["uid"] == slice_["metadata"]["uid"]
    finally:
        storage.close()
