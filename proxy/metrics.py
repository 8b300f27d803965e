"""The kube-proxy's Prometheus metrics, under upstream's names (pkg/proxy/metrics/metrics.go).

One registry per proxy instance rather than prometheus_client's global one, so two proxies in one process
(tests, `slimkube up`) do not collide and each serves only its own numbers.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Upstream's buckets for sync durations: exponential from 1 ms, factor 2, 15 buckets.
_SYNC_BUCKETS = tuple(0.001 * 2 ** i for i in range(15))


class ProxyMetrics:
    """The metrics a sync updates; `registry` is what /metrics serves."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.sync_duration = Histogram(
            "kubeproxy_sync_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds",
            buckets=_SYNC_BUCKETS, registry=self.registry)
        self.partial_sync_duration = Histogram(
            "kubeproxy_sync_partial_proxy_rules_duration_seconds", "Partial SyncProxyRules latency in seconds",
            buckets=_SYNC_BUCKETS, registry=self.registry)
        self.full_sync_duration = Histogram(
            "kubeproxy_sync_full_proxy_rules_duration_seconds", "Full SyncProxyRules latency in seconds",
            buckets=_SYNC_BUCKETS, registry=self.registry)
        self.last_sync_timestamp = Gauge(
            "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
            "The last time proxy rules were successfully synced", registry=self.registry)
        self.last_queued_timestamp = Gauge(
            "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
            "The last time a sync of proxy rules was queued", registry=self.registry)
        self.restore_failures = Counter(
            "kubeproxy_sync_proxy_rules_iptables_restore_failures",
            "Cumulative proxy iptables restore failures", registry=self.registry)
        self.partial_restore_failures = Counter(
            "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures",
            "Cumulative proxy iptables partial restore failures", registry=self.registry)
        self.iptables_total = Gauge(
            "kubeproxy_sync_proxy_rules_iptables_total", "Total number of iptables rules owned by kube-proxy",
            ["table"], registry=self.registry)
        self.service_changes = Counter(
            "kubeproxy_sync_proxy_rules_service_changes", "Cumulative proxy rules Service changes",
            registry=self.registry)
        self.endpoint_changes = Counter(
            "kubeproxy_sync_proxy_rules_endpoint_changes", "Cumulative proxy rules Endpoint changes",
            registry=self.registry)
        self.no_endpoint_services = Gauge(
            "kubeproxy_sync_proxy_rules_no_local_endpoints_total",
            "Number of services with a Local traffic policy and no endpoints", ["traffic_policy"],
            registry=self.registry)
        self.conntrack_failures = Counter(
            "kubeproxy_conntrack_cleanup_failures", "Cumulative stale conntrack entry deletions that failed",
            registry=self.registry)
