"""The kube-proxy's health and metrics endpoints, served on 127.0.0.1 free ports: upstream's healthz JSON
body and codes (proxier_health.go), Prometheus text with upstream's metric names."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import requests

from proxy.metrics import ProxyMetrics
from proxy.server import Health, ProxyHTTPServer, go_time, health_body
from tests.support.apiserver import free_port

NOW = 1_700_000_000.25  # 2023-11-14 22:13:20.25 UTC


@pytest.mark.parametrize("stamp, text", [
    pytest.param(NOW, "2023-11-14 22:13:20.25 +0000 UTC", id="fraction-trimmed"),
    pytest.param(1_700_000_000.0, "2023-11-14 22:13:20 +0000 UTC", id="whole-second"),
    pytest.param(None, "0001-01-01 00:00:00 +0000 UTC", id="zero-time"),
])
def test_times_print_as_go_does(stamp: float | None, text: str) -> None:
    assert go_time(stamp) == text


def test_healthy_reports_now_as_last_updated_as_upstream_does() -> None:
    status, body = health_body(Health(healthy=True, last_updated=NOW - 100), NOW)
    assert status == 200
    stamp = "2023-11-14 22:13:20.25 +0000 UTC"
    assert body == f'{{"lastUpdated": "{stamp}","currentTime": "{stamp}"}}'  # upstream's exact spacing


def test_unhealthy_is_503_with_the_last_sync_time() -> None:
    status, body = health_body(Health(healthy=False, last_updated=1_700_000_000.0 - 60), NOW)
    assert status == 503
    assert json.loads(body) == {"lastUpdated": "2023-11-14 22:12:20 +0000 UTC",
                                "currentTime": "2023-11-14 22:13:20.25 +0000 UTC"}


class Switch:
    def __init__(self) -> None:
        self.health = Health(healthy=True, last_updated=None)

    def __call__(self) -> Health:
        return self.health


@pytest.fixture
def served() -> Iterator[tuple[ProxyHTTPServer, Switch, ProxyMetrics]]:
    switch, metrics = Switch(), ProxyMetrics()
    server = ProxyHTTPServer(healthz_address=("127.0.0.1", free_port()), metrics_address=("127.0.0.1", free_port()),
                             health=switch, registry=metrics.registry, clock=lambda: NOW)
    server.start()
    try:
        yield server, switch, metrics
    finally:
        server.stop()


def test_healthz_and_livez_follow_the_proxier(served) -> None:
    server, switch, metrics = served
    base = f"http://127.0.0.1:{server.ports['healthz']}"
    for path in ("/healthz", "/livez"):
        response = requests.get(base + path, timeout=5)
        assert response.status_code == 200 and response.headers["Content-Type"].startswith("application/json")
        assert response.json()["currentTime"] == "2023-11-14 22:13:20.25 +0000 UTC"
    switch.health = Health(healthy=False, last_updated=None)
    assert requests.get(base + "/healthz", timeout=5).status_code == 503
    assert requests.get(base + "/livez", timeout=5).json()["lastUpdated"] == "0001-01-01 00:00:00 +0000 UTC"
    assert metrics.registry.get_sample_value("kubeproxy_proxy_healthz_total", {"code": "200"}) == 1
    assert metrics.registry.get_sample_value("kubeproxy_proxy_healthz_total", {"code": "503"}) == 1
    assert requests.get(base + "/metrics", timeout=5).status_code == 404  # metrics live on their own address


def test_metrics_in_prometheus_text_with_upstream_names(served) -> None:
    server, _, metrics = served
    metrics.sync_duration.observe(0.02)
    metrics.iptables_total.labels(table="nat").set(12)
    response = requests.get(f"http://127.0.0.1:{server.ports['metrics']}/metrics", timeout=5)
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/plain")
    assert "kubeproxy_sync_proxy_rules_duration_seconds_count 1.0" in response.text
    assert 'kubeproxy_sync_proxy_rules_iptables_total{table="nat"} 12.0' in response.text
    mode = requests.get(f"http://127.0.0.1:{server.ports['metrics']}/proxyMode", timeout=5)
    assert mode.text == "iptables"


def test_one_listener_when_both_share_an_address_and_none_when_disabled() -> None:
    metrics = ProxyMetrics()
    shared = ProxyHTTPServer(healthz_address=("127.0.0.1", 0), metrics_address=("127.0.0.1", 0),
                             health=Switch(), registry=metrics.registry)
    shared.start()
    try:
        base = f"http://127.0.0.1:{shared.ports['healthz']}"
        assert shared.ports["healthz"] == shared.ports["metrics"]
        assert requests.get(base + "/healthz", timeout=5).status_code == 200
        assert requests.get(base + "/metrics", timeout=5).status_code == 200
    finally:
        shared.stop()
    metrics_only = ProxyHTTPServer(healthz_address=None, metrics_address=("127.0.0.1", 0), health=Switch(),
                                   registry=ProxyMetrics().registry)
    metrics_only.start()
    try:
        assert set(metrics_only.ports) == {"metrics"}
    finally:
        metrics_only.stop()


def test_a_port_in_use_fails_start_and_leaves_nothing_running(served) -> None:
    server, _, _ = served
    clash = ProxyHTTPServer(healthz_address=("127.0.0.1", server.ports["healthz"]), metrics_address=None,
                            health=Switch(), registry=ProxyMetrics().registry)
    with pytest.raises(OSError):
        clash.start()
    assert clash.ports == {}
