"""The change trackers: coalescing, cancelling reverts, removals, and the stale-UDP bookkeeping."""

from __future__ import annotations

from proxy.model import EndpointInfo, ServicePortName
from proxy.trackers import EndpointSliceChangeTracker, ServiceChangeTracker, StaleEndpoint, stale_udp
from tests.support.proxy_objects import endpoints, service

WEB = ServicePortName("default", "web", "http", "TCP")
DNS = ServicePortName("kube-system", "dns", "dns", "UDP")


def test_several_changes_between_syncs_coalesce_into_one():
    tracker = ServiceChangeTracker()
    assert tracker.update(None, service(ip="10.96.0.10"))
    assert tracker.update(service(ip="10.96.0.10"), service(ip="10.96.0.11"))
    update = tracker.apply({})
    assert update.changed == {WEB} and update.removed == frozenset()
    assert update.services[WEB].cluster_ip == "10.96.0.11"
    assert not tracker.pending()
    assert tracker.apply(update.services).changed == frozenset()


def test_a_change_that_reverts_cancels_out():
    tracker = ServiceChangeTracker()
    tracker.update(None, service())
    synced = tracker.apply({}).services
    assert tracker.update(service(), service(port=81))
    assert not tracker.update(service(port=81), service())
    assert not tracker.pending()
    assert tracker.apply(synced).changed == frozenset()


def test_added_then_deleted_before_a_sync_is_no_change():
    tracker = ServiceChangeTracker()
    tracker.update(None, service())
    assert not tracker.update(service(), None)
    assert tracker.apply({}).services == {}


def test_deleted_service_is_reported_removed():
    tracker = ServiceChangeTracker()
    tracker.update(None, service())
    tracker.update(None, service("other"))
    synced = tracker.apply({}).services
    tracker.update(service(), None)
    update = tracker.apply(synced)
    assert update.removed == {WEB} and update.changed == {WEB}
    assert set(update.services) == {ServicePortName("default", "other", "http", "TCP")}


def test_headless_service_has_no_ports():
    tracker = ServiceChangeTracker()
    assert not tracker.update(None, service(ip="None"))


def test_endpoint_changes_fold_per_port_and_mark_locality():
    tracker = EndpointSliceChangeTracker(node_name="n1")
    obj = endpoints(ips=("10.244.1.2",), node_name="n1")
    tracker.update(None, obj)
    update = tracker.apply({})
    assert update.endpoints[WEB] == (EndpointInfo("10.244.1.2", 8080, node_name="n1", is_local=True),)
    tracker.update(obj, None)
    update = tracker.apply(update.endpoints)
    assert update.endpoints == {} and update.removed == {WEB}
    assert update.stale_endpoints == ()  # TCP: no conntrack work


def test_udp_endpoint_gone_is_stale_and_first_endpoint_is_newly_active():
    tracker = EndpointSliceChangeTracker()
    dns = dict(name="dns", namespace="kube-system", port=53, protocol="UDP", port_name="dns")
    tracker.update(None, endpoints(ips=("10.244.1.2",), **dns))
    first = tracker.apply({})
    assert first.newly_active == {DNS} and first.stale_endpoints == ()
    tracker.update(endpoints(ips=("10.244.1.2",), **dns), endpoints(ips=("10.244.1.3",), **dns))
    second = tracker.apply(first.endpoints)
    assert second.stale_endpoints == (StaleEndpoint(DNS, EndpointInfo("10.244.1.2", 53)),)
    assert second.newly_active == frozenset()


def test_not_ready_endpoint_was_never_serving_so_it_is_not_stale():
    old = {DNS: (EndpointInfo("10.244.1.2", 53, ready=False),)}
    stale, active = stale_udp(old, {}, frozenset({DNS}))
    assert stale == () and active == frozenset()


def test_endpoint_turning_not_ready_is_stale():
    old = {DNS: (EndpointInfo("10.244.1.2", 53),)}
    new = {DNS: (EndpointInfo("10.244.1.2", 53, ready=False),)}
    stale, _ = stale_udp(old, new, frozenset({DNS}))
    assert stale == (StaleEndpoint(DNS, EndpointInfo("10.244.1.2", 53)),)


def test_slices_of_one_service_are_one_entry_and_a_move_between_slices_is_no_change():
    tracker = EndpointSliceChangeTracker()
    a = endpoints(ips=("10.244.1.2",), slice_name="web-a")
    b = endpoints(ips=("10.244.1.3",), slice_name="web-b")
    tracker.update(None, a)
    tracker.update(None, b)
    update = tracker.apply({})
    assert [e.ip for e in update.endpoints[WEB]] == ["10.244.1.2", "10.244.1.3"]
    # the endpoint moves from web-b to web-a: the service's backends are the same
    moved_a = endpoints(ips=("10.244.1.2", "10.244.1.3"), slice_name="web-a")
    tracker.update(a, moved_a)
    assert not tracker.update(b, endpoints(ips=(), slice_name="web-b"))
    assert not tracker.pending()
    tracker.update(endpoints(ips=(), slice_name="web-b"), None)
    tracker.update(moved_a, None)
    assert tracker.apply(update.endpoints).removed == {WEB}


def test_slice_without_service_name_label_is_ignored():
    tracker = EndpointSliceChangeTracker()
    unlabelled = endpoints()
    del unlabelled["metadata"]["labels"]
    assert not tracker.update(None, unlabelled)
