"""The Proxier against an in-memory iptables: when it syncs, full vs partial, failures and fallbacks,
conntrack cleanup, metrics and health. The rules themselves are proxy/render.py's (tested there)."""

from __future__ import annotations

import threading
import time

import pytest

from proxy.chains import endpoint_chain_name, service_chain_name
from proxy.conntrack import Flow
from proxy.metrics import ProxyMetrics
from proxy.model import NodeConfig, ServicePortName
from proxy.proxier import Proxier
from tests.support.fake_clock import FakeClock
from tests.support.fake_iptables import FakeIptables
from tests.support.proxy_objects import endpoints, service

WEB = ServicePortName("default", "web", "http", "TCP")
API = ServicePortName("default", "api", "http", "TCP")
DNS = ServicePortName("kube-system", "dns", "dns", "UDP")
DNS_ARGS = dict(name="dns", namespace="kube-system", protocol="UDP", port_name="dns")


class FakeConntrack:
    def __init__(self) -> None:
        self.deleted: list[Flow] = []

    def delete(self, flow: Flow) -> int:
        self.deleted.append(flow)
        return 1


@pytest.fixture
def ipt() -> FakeIptables:
    return FakeIptables()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(100.0)


@pytest.fixture
def conntrack() -> FakeConntrack:
    return FakeConntrack()


@pytest.fixture
def proxier(ipt: FakeIptables, clock: FakeClock, conntrack: FakeConntrack) -> Proxier:
    return Proxier(node=NodeConfig("n1", cluster_cidr="10.244.0.0/16"), iptables=ipt, metrics=ProxyMetrics(),
                   conntrack=conntrack, clock=clock.monotonic)


def metric(proxier: Proxier, name: str, **labels: str) -> float:
    return proxier.metrics.registry.get_sample_value(name, labels) or 0.0


def synced(proxier: Proxier) -> Proxier:
    """Two services with one endpoint each, initialised and synced once (a full sync)."""
    proxier.on_service_add(service("web", ip="10.96.0.10"))
    proxier.on_service_add(service("api", ip="10.96.0.11"))
    proxier.on_endpoint_slice_add(endpoints("web", ("10.244.1.2",)))
    proxier.on_endpoint_slice_add(endpoints("api", ("10.244.1.3",)))
    proxier.set_initialized()
    proxier.sync()
    return proxier


def test_nothing_is_written_before_initialisation(proxier: Proxier, ipt: FakeIptables):
    proxier.on_service_add(service())
    proxier.sync()
    assert ipt.calls == []
    assert proxier.healthy()[0]


def test_first_sync_is_full_with_jumps_ensured(proxier: Proxier, ipt: FakeIptables):
    synced(proxier)
    nat = ipt.chains("nat")
    assert {service_chain_name(WEB), service_chain_name(API), "KUBE-SERVICES", "KUBE-POSTROUTING"} <= nat
    assert ("-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES") in \
        ipt.tables["nat"]["PREROUTING"]
    assert ipt.tables["nat"]["POSTROUTING"].count(
        ("-m", "comment", "--comment", "kubernetes postrouting rules", "-j", "KUBE-POSTROUTING")) == 1
    assert metric(proxier, "kubeproxy_sync_full_proxy_rules_duration_seconds_count") == 1
    assert metric(proxier, "kubeproxy_sync_proxy_rules_iptables_total", table="nat") > 0


def test_one_endpoint_change_is_a_partial_sync_of_its_chains_only(proxier: Proxier, ipt: FakeIptables):
    synced(proxier)
    ipt.calls.clear()
    proxier.on_endpoint_slice_update(endpoints("web", ("10.244.1.2",)), endpoints("web", ("10.244.1.4",)))
    proxier.sync()
    text = ipt.restores[-1]
    assert f":{service_chain_name(WEB)} " in text and f":{service_chain_name(API)} " not in text
    assert f"-X {endpoint_chain_name(WEB, '10.244.1.2:8080')}" in text
    assert not any(call[0] in ("has_rule", "insert_rule") for call in ipt.calls)  # jumps only on full syncs
    assert not any(call[0] == "save" for call in ipt.calls)  # the chains the last restore left are known
    assert endpoint_chain_name(WEB, "10.244.1.4:8080") in ipt.chains("nat")
    assert endpoint_chain_name(WEB, "10.244.1.2:8080") not in ipt.chains("nat")
    assert metric(proxier, "kubeproxy_sync_partial_proxy_rules_duration_seconds_count") == 1


def test_full_sync_again_after_the_sync_period(proxier: Proxier, ipt: FakeIptables, clock: FakeClock):
    synced(proxier)
    clock.step(29.0)
    proxier.on_service_update(service("web", ip="10.96.0.10"), service("web", ip="10.96.0.13"))
    proxier.sync()
    assert f":{service_chain_name(API)} " not in ipt.restores[-1]  # partial
    clock.step(0.7)  # now 100.0 + 29.7: the periodic run, a moment early by the clock the sync reads
    proxier.on_service_update(service("web", ip="10.96.0.13"), service("web", ip="10.96.0.12"))
    proxier.sync()
    assert f":{service_chain_name(API)} " in ipt.restores[-1]
    assert metric(proxier, "kubeproxy_sync_full_proxy_rules_duration_seconds_count") == 2


def test_deleted_service_chains_are_removed(proxier: Proxier, ipt: FakeIptables):
    synced(proxier)
    proxier.on_service_delete(service("api", ip="10.96.0.11"))
    proxier.on_endpoint_slice_delete(endpoints("api", ("10.244.1.3",)))
    proxier.sync()
    assert service_chain_name(API) not in ipt.chains("nat")
    assert endpoint_chain_name(API, "10.244.1.3:8080") not in ipt.chains("nat")
    assert service_chain_name(WEB) in ipt.chains("nat")


def test_failed_partial_restore_falls_back_to_a_full_one_at_once(proxier: Proxier, ipt: FakeIptables):
    synced(proxier)
    ipt.restores.clear()
    ipt.fail_restores = ["iptables-restore: line 7 failed"]
    proxier.on_endpoint_slice_update(endpoints("web", ("10.244.1.2",)), endpoints("web", ("10.244.1.4",)))
    proxier.sync()
    assert len(ipt.restores) == 2
    assert f":{service_chain_name(API)} " not in ipt.restores[0] and f":{service_chain_name(API)} " in ipt.restores[1]
    assert endpoint_chain_name(WEB, "10.244.1.4:8080") in ipt.chains("nat")
    assert metric(proxier, "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total") == 1
    assert metric(proxier, "kubeproxy_sync_proxy_rules_iptables_restore_failures_total") == 1


def test_lock_failure_is_counted_not_raised_and_the_next_sync_is_full(proxier: Proxier, ipt: FakeIptables,
                                                                      clock: FakeClock):
    synced(proxier)
    lock = "Another app is currently holding the xtables lock. Stopped waiting after 5s."
    ipt.fail_restores = [lock, lock]
    proxier.on_endpoint_slice_update(endpoints("web", ("10.244.1.2",)), endpoints("web", ("10.244.1.4",)))
    proxier.sync()  # does not raise
    assert metric(proxier, "kubeproxy_sync_proxy_rules_iptables_restore_failures_total") == 2
    assert endpoint_chain_name(WEB, "10.244.1.4:8080") not in ipt.chains("nat")
    clock.step(59.0)
    assert proxier.healthy()[0]
    clock.step(1.0)
    healthy, message = proxier.healthy()
    assert not healthy and "not synced" in message
    ipt.restores.clear()
    proxier.sync()  # nothing new queued: still a full sync, because the last one failed
    assert f":{service_chain_name(API)} " in ipt.restores[-1]
    assert endpoint_chain_name(WEB, "10.244.1.4:8080") in ipt.chains("nat")
    assert proxier.healthy()[0]


def test_removed_udp_endpoint_clears_its_conntrack_entries(proxier: Proxier, conntrack: FakeConntrack):
    proxier.on_service_add(service(ip="10.96.0.53", port=53, **DNS_ARGS))
    proxier.on_endpoint_slice_add(endpoints(ips=("10.244.1.2", "10.244.1.3"), port=53, **DNS_ARGS))
    proxier.set_initialized()
    proxier.sync()
    assert conntrack.deleted == [Flow("udp", orig_dst="10.96.0.53", dport=53)]  # 0 → 2 endpoints
    conntrack.deleted.clear()
    proxier.on_endpoint_slice_update(endpoints(ips=("10.244.1.2", "10.244.1.3"), port=53, **DNS_ARGS),
                                endpoints(ips=("10.244.1.3",), port=53, **DNS_ARGS))
    proxier.sync()
    assert conntrack.deleted == [Flow("udp", orig_dst="10.96.0.53", dport=53, reply_src="10.244.1.2")]


def test_run_loop_syncs_on_changes_and_survives_failures(ipt: FakeIptables):
    proxier = Proxier(node=NodeConfig("n1"), iptables=ipt, metrics=ProxyMetrics(), min_sync_period=0.01,
                      sync_period=30.0, conntrack=FakeConntrack())
    stop = threading.Event()
    thread = threading.Thread(target=proxier.run, args=(stop,), daemon=True)
    thread.start()
    try:
        ipt.fail_restores = ["lock"]
        proxier.on_service_add(service())
        proxier.on_endpoint_slice_add(endpoints())
        proxier.set_initialized()
        deadline = time.monotonic() + 5
        failures = "kubeproxy_sync_proxy_rules_iptables_restore_failures_total"
        while time.monotonic() < deadline and not metric(proxier, failures):
            time.sleep(0.01)
        assert thread.is_alive() and ipt.fail_restores == []
        assert service_chain_name(WEB) not in ipt.chains("nat")  # failed; the retry waits for sync_period
        proxier.on_endpoint_slice_update(endpoints(), endpoints(ips=("10.244.1.9",)))  # a request ends the retry wait
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and endpoint_chain_name(WEB, "10.244.1.9:8080") not in ipt.chains("nat"):
            time.sleep(0.01)
        assert endpoint_chain_name(WEB, "10.244.1.9:8080") in ipt.chains("nat")
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
