"""Which conntrack entries a sync deletes, and the argv and exit-status handling of the conntrack client."""

from __future__ import annotations

import pytest

from control.util.iptables import Result
from proxy.conntrack import Conntrack, ConntrackError, Flow, delete_all, flows_to_delete
from proxy.model import EndpointInfo, ServicePortInfo, ServicePortName
from proxy.trackers import StaleEndpoint

DNS = ServicePortName("kube-system", "dns", "dns", "UDP")
WEB = ServicePortName("default", "web", "http", "TCP")
DNS_INFO = ServicePortInfo(name=DNS, cluster_ip="10.96.0.10", port=53, protocol="UDP", node_port=30053,
                           external_ips=("192.0.2.10",), load_balancer_ips=("198.51.100.7",))
WEB_INFO = ServicePortInfo(name=WEB, cluster_ip="10.96.0.20", port=80, protocol="TCP")


def test_gone_udp_endpoint_deletes_entries_per_service_address_and_nodeport():
    flows = flows_to_delete(services={DNS: DNS_INFO}, old_services={},
                            stale_endpoints=[StaleEndpoint(DNS, EndpointInfo("10.244.1.2", 53))], newly_active=[])
    assert flows == sorted([
        Flow("udp", orig_dst="10.96.0.10", dport=53, reply_src="10.244.1.2"),
        Flow("udp", orig_dst="192.0.2.10", dport=53, reply_src="10.244.1.2"),
        Flow("udp", orig_dst="198.51.100.7", dport=53, reply_src="10.244.1.2"),
        Flow("udp", dport=30053, reply_src="10.244.1.2"),
    ])


def test_newly_active_udp_service_flushes_its_addresses():
    flows = flows_to_delete(services={DNS: DNS_INFO}, old_services={}, stale_endpoints=[], newly_active=[DNS])
    assert Flow("udp", orig_dst="10.96.0.10", dport=53) in flows
    assert Flow("udp", dport=30053) in flows and len(flows) == 4


def test_removed_service_uses_its_previous_info_and_tcp_is_ignored():
    stale = [StaleEndpoint(DNS, EndpointInfo("10.244.1.2", 53)), StaleEndpoint(WEB, EndpointInfo("10.244.1.3", 80))]
    flows = flows_to_delete(services={}, old_services={DNS: DNS_INFO, WEB: WEB_INFO}, stale_endpoints=stale,
                            newly_active=[WEB])
    assert {f.reply_src for f in flows} == {"10.244.1.2"} and len(flows) == 4


class Recorder:
    def __init__(self, *results: Result) -> None:
        self.results = list(results)
        self.argvs: list[list[str]] = []

    def __call__(self, argv, *, stdin=None) -> Result:
        self.argvs.append(list(argv))
        return self.results.pop(0)


def test_delete_argv_and_count():
    run = Recorder(Result(0, "", "conntrack v1.4.7 (conntrack-tools): 2 flow entries have been deleted.\n"))
    assert Conntrack(run=run).delete(Flow("udp", orig_dst="10.96.0.10", dport=53, reply_src="10.244.1.2")) == 2
    assert run.argvs == [["conntrack", "-D", "-p", "udp", "--orig-dst", "10.96.0.10", "--dport", "53",
                          "--reply-src", "10.244.1.2"]]


def test_nothing_to_delete_is_not_an_error():
    run = Recorder(Result(1, "", "conntrack v1.4.7 (conntrack-tools): 0 flow entries have been deleted.\n"))
    assert Conntrack(run=run).delete(Flow("udp", dport=30053)) == 0


def test_other_failures_raise_and_delete_all_goes_on():
    run = Recorder(Result(1, "", "conntrack v1.4.7 (conntrack-tools): Operation not permitted\n"),
                   Result(0, "", "1 flow entries have been deleted.\n"))
    client = Conntrack(run=run)
    with pytest.raises(ConntrackError):
        client.delete(Flow("udp", dport=1))
    run.results = [Result(2, "", "bad"), Result(0, "", "1 flow entries have been deleted.\n")]
    deleted, errors = delete_all(client, [Flow("udp", dport=1), Flow("udp", dport=2)])
    assert deleted == 1 and len(errors) == 1
