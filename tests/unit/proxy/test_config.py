"""The kube-proxy's config file: upstream KubeProxyConfiguration names and defaults, Go durations, flags on
top, clear errors; and the pure start-up decisions (node IPs, route_localnet, conntrack sysctls)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeagent.config import ConfigError
from proxy.config import (
    ConntrackConfig,
    ProxyConfig,
    conntrack_sysctls,
    from_document,
    load,
    node_config,
    split_host_port,
)
from proxy.model import NodeConfig

FULL = """\
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
bindAddress: 0.0.0.0
healthzBindAddress: 127.0.0.1:20256
metricsBindAddress: 127.0.0.1:20249
clusterCIDR: 10.244.0.0/16
hostnameOverride: Worker-1
mode: iptables
configSyncPeriod: 1m0s
nodePortAddresses: [192.168.0.0/16, primary]
clientConnection:
  kubeconfig: /etc/kube-proxy.kubeconfig
  qps: 5
iptables:
  masqueradeAll: true
  masqueradeBit: 15
  minSyncPeriod: 500ms
  syncPeriod: 1m30s
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 2h
  tcpCloseWaitTimeout: 0s
"""


def test_defaults_are_upstreams() -> None:
    config = ProxyConfig()
    assert (config.healthz_bind_address, config.metrics_bind_address) == ("0.0.0.0:10256", "127.0.0.1:10249")
    assert (config.min_sync_period, config.sync_period, config.config_sync_period) == (1.0, 30.0, 900.0)
    assert (config.masquerade_bit, config.masquerade_all, config.localhost_nodeports) == (14, False, True)
    assert config.conntrack == ConntrackConfig(max_per_core=32768, min=131072, tcp_established_timeout=86400.0,
                                               tcp_close_wait_timeout=3600.0)


def test_every_field_of_a_file_then_flags_on_top(tmp_path: Path) -> None:
    path = tmp_path / "kube-proxy.yaml"
    path.write_text(FULL)
    config = load(str(path), overrides={"cluster_cidr": "10.100.0.0/16", "hostname_override": None})
    assert config.healthz_bind_address == "127.0.0.1:20256" and config.metrics_bind_address == "127.0.0.1:20249"
    assert config.cluster_cidr == "10.100.0.0/16"  # the flag wins
    assert config.node_name == "worker-1"  # the file's, lower-cased as upstream does
    assert (config.masquerade_all, config.masquerade_bit, config.localhost_nodeports) == (True, 15, False)
    assert (config.min_sync_period, config.sync_period, config.config_sync_period) == (0.5, 90.0, 60.0)
    assert config.nodeport_addresses == ("192.168.0.0/16", "primary")
    assert config.kubeconfig == "/etc/kube-proxy.kubeconfig"
    assert (config.conntrack.max_per_core, config.conntrack.tcp_established_timeout,
            config.conntrack.tcp_close_wait_timeout) == (0, 7200.0, 0.0)
    assert config.ignored == ("clientConnection.qps",)


@pytest.mark.parametrize("document, message", [
    pytest.param({"mode": "ipvs"}, "only in \"iptables\" mode", id="ipvs-mode"),
    pytest.param({"mode": "nftables"}, "'nftables' is not supported", id="nftables-mode"),
    pytest.param({"syncPeriod": "30s"}, "unknown field 'syncPeriod'", id="top-level-sync-period"),
    pytest.param({"iptables": {"masqueradeAl": True}}, "unknown field 'iptables.masqueradeAl'", id="typo"),
    pytest.param({"iptables": {"syncPeriod": "30"}}, "iptables.syncPeriod", id="duration-without-unit"),
    pytest.param({"iptables": {"minSyncPeriod": "1m", "syncPeriod": "30s"}}, "minSyncPeriod", id="min-above-max"),
    pytest.param({"iptables": {"masqueradeBit": 32}}, "masqueradeBit", id="bit"),
    pytest.param({"iptables": {"masqueradeAll": "yes"}}, "expected true or false", id="bool"),
    pytest.param({"iptables": "fast"}, "iptables: expected a mapping", id="section-not-mapping"),
    pytest.param({"healthzBindAddress": "10256"}, "healthzBindAddress", id="no-host"),
    pytest.param({"metricsBindAddress": "localhost:10249"}, "metricsBindAddress", id="hostname"),
    pytest.param({"clusterCIDR": "10.244.0.1/16"}, "clusterCIDR", id="host-bits"),
    pytest.param({"nodePortAddresses": ["not-a-cidr"]}, "nodePortAddresses", id="nodeport-cidr"),
    pytest.param({"kind": "KubeletConfiguration"}, "expected kind KubeProxyConfiguration", id="kind"),
    pytest.param({"conntrack": {"maxPerCore": -1}}, "maxPerCore", id="negative"),
])
def test_errors_name_the_field(document: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        from_document(document)


def test_unreadable_and_bad_yaml_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("iptables: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load(str(bad))
    with pytest.raises(ConfigError, match="unknown settings"):
        load(None, overrides={"not_a_field": 1})


@pytest.mark.parametrize("text, expected", [
    ("0.0.0.0:10256", ("0.0.0.0", 10256)),
    ("[::1]:10249", ("::1", 10249)),
    ("127.0.0.1:0", ("127.0.0.1", 0)),
])
def test_host_port(text: str, expected: tuple[str, int]) -> None:
    assert split_host_port(text, name="x") == expected


NODE = {"metadata": {"name": "worker-1"}, "status": {"addresses": [
    {"type": "Hostname", "address": "worker-1"}, {"type": "InternalIP", "address": "10.0.0.5"},
    {"type": "ExternalIP", "address": "203.0.113.9"}]}}


@pytest.mark.parametrize("config, node, expected_ips", [
    pytest.param(ProxyConfig(), NODE, ("10.0.0.5",), id="node-internal-ip"),
    pytest.param(ProxyConfig(), None, ("192.168.1.2", "10.0.0.7"), id="no-node-host-addresses-without-loopback"),
    pytest.param(ProxyConfig(bind_address="10.0.0.9"), None, ("10.0.0.9",), id="no-node-specific-bind-address"),
    pytest.param(ProxyConfig(bind_address="10.0.0.9"), NODE, ("10.0.0.5",), id="node-wins-over-bind-address"),
])
def test_node_ips(config: ProxyConfig, node: dict | None, expected_ips: tuple[str, ...]) -> None:
    result = node_config(config, node=node, host_addresses=["127.0.0.1", "192.168.1.2", "10.0.0.7"])
    assert result.node_ips == expected_ips


def test_node_config_carries_the_proxy_options() -> None:
    config = ProxyConfig(hostname_override="w1", cluster_cidr="10.244.0.0/16", masquerade_all=True,
                         masquerade_bit=13, nodeport_addresses=("192.168.0.0/16", "primary"),
                         localhost_nodeports=False)
    assert node_config(config, node=NODE, host_addresses=[]) == NodeConfig(
        node_name="w1", node_ips=("10.0.0.5",), cluster_cidr="10.244.0.0/16", masquerade_all=True,
        masquerade_bit=13, nodeport_addresses=("192.168.0.0/16", "10.0.0.5/32"), localhost_nodeports=False)


def test_conntrack_sysctls_as_upstream_setup_conntrack() -> None:
    assert conntrack_sysctls(ConntrackConfig(), cpus=2) == {
        "net/netfilter/nf_conntrack_max": 131072,  # max(32768 × 2, min)
        "net/netfilter/nf_conntrack_tcp_timeout_established": 86400,
        "net/netfilter/nf_conntrack_tcp_timeout_close_wait": 3600,
    }
    assert conntrack_sysctls(ConntrackConfig(), cpus=8)["net/netfilter/nf_conntrack_max"] == 262144
    zeros = ConntrackConfig(max_per_core=0, min=0, tcp_established_timeout=0, tcp_close_wait_timeout=0)
    assert conntrack_sysctls(zeros, cpus=4) == {}
    udp = ConntrackConfig(max_per_core=0, tcp_established_timeout=0, tcp_close_wait_timeout=0, udp_timeout=30,
                          udp_stream_timeout=120, tcp_be_liberal=True)
    assert conntrack_sysctls(udp, cpus=1) == {
        "net/netfilter/nf_conntrack_udp_timeout": 30, "net/netfilter/nf_conntrack_udp_timeout_stream": 120,
        "net/netfilter/nf_conntrack_tcp_be_liberal": 1}
