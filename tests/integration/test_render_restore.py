"""Rendered proxy rules loaded into the real iptables (legacy and nft, whichever are installed) inside a
throwaway network namespace: the syntax is accepted, and a full, then partial, then stale-deleting
sequence of `-restore --noflush` loads leaves exactly the chains `render` says the state needs. The tables
are then read back with `-save` and traced (tests/support/packet_trace.py): what the kernel holds sends
packets where the rendered text says."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest

from control.util.iptables import Iptables, IptablesError, Mode, Result, run_command
from proxy.chains import endpoint_chain_name, service_chain_name
from proxy.model import EndpointInfo, NodeConfig, ProxyState, ServicePortInfo, ServicePortName, service_ports
from proxy.render import jump_rules, render
from tests.conftest import unavailable
from tests.support.packet_trace import Netfilter, Packet

NODE = NodeConfig("node-a", node_ips=("192.168.77.10",), cluster_cidr="10.244.0.0/16")
POD = "10.244.7.7"


def backend(mode: Mode) -> Mode:
    installed = [m for m in Mode if shutil.which(f"iptables-{m.value}-restore")]
    if not installed:
        unavailable("iptables-restore", "neither iptables-legacy-restore nor iptables-nft-restore is installed")
    if mode not in installed:  # Debian's iptables package ships both backends
        unavailable(f"iptables-{mode.value}-restore", "this backend is not installed")
    return mode


def in_netns(ns: str) -> Callable[..., Result]:
    def run(argv: Sequence[str], *, stdin: str | None = None) -> Result:
        return run_command(["ip", "netns", "exec", ns, *argv], stdin=stdin)
    return run


def service(name: str, ip: str, **fields) -> ServicePortInfo:
    return ServicePortInfo(name=ServicePortName("ns", name, "http", "TCP"), cluster_ip=ip, port=80,
                           protocol="TCP", **fields)


def endpoints(*ips: str) -> list[EndpointInfo]:
    return [EndpointInfo(ip, 8080) for ip in ips]


WEB = service("web", "10.96.0.10", session_affinity_seconds=60)
NODEPORT = service("np", "10.96.0.11", node_port=30080, external_ips=("192.0.2.1",),
                   load_balancer_ips=("198.51.100.7",))
EMPTY = service("empty", "10.96.0.12", node_port=30081)
DNS = ServicePortInfo(name=ServicePortName("ns", "dns", "dns", "UDP"), cluster_ip="10.96.0.53", port=53,
                      protocol="UDP")


def first_state() -> ProxyState:
    return ProxyState(
        services={s.name: s for s in (WEB, NODEPORT, EMPTY, DNS)},
        endpoints={WEB.name: endpoints("10.244.1.2", "10.244.2.3", "10.244.3.4"),
                   NODEPORT.name: endpoints("10.244.1.5"), DNS.name: [EndpointInfo("10.244.1.9", 5353)]})


def kube_chains(ipt: Iptables) -> dict[str, frozenset[str]]:
    return {table: frozenset(re.findall(r"^:(KUBE-\S+)", ipt.save(table), re.MULTILINE)) for table in ("filter", "nat")}


def saved_table(ipt: Iptables, table: str) -> list[str]:
    """The table as iptables-save prints it, without its comment lines (they carry the time of the save)."""
    return [line for line in ipt.save(table).splitlines() if not line.startswith("#")]


def kube_rule_count(ipt: Iptables, table: str) -> int:
    return len(re.findall(r"^-A KUBE-", ipt.save(table), re.MULTILINE))


def kernel_trace(ipt: Iptables, packet: Packet):
    tables = Netfilter(node_ips=NODE.node_ips)
    tables.restore(ipt.save("filter") + ipt.save("nat"))
    return tables.trace(packet)


@pytest.mark.parametrize("mode", [pytest.param(Mode.LEGACY, id="legacy"), pytest.param(Mode.NFT, id="nft")])
def test_full_partial_and_stale_sequence(mode: Mode, netns) -> None:
    ipt = Iptables(backend(mode), in_netns(netns(mode.value[:3])))

    # 1. Full sync, jumps ensured as the proxier does (-C, else -I), twice: no duplicates.
    full = render(first_state(), NODE)
    ipt.restore(full.text)
    for _ in range(2):
        for jump in jump_rules(NODE):
            if not ipt.has_rule(jump.table, jump.chain, jump.rule):
                ipt.insert_rule(jump.table, jump.chain, jump.rule)
    assert kube_chains(ipt) == full.chains
    assert kube_rule_count(ipt, "nat") == full.rule_counts["nat"]
    assert kube_rule_count(ipt, "filter") == full.rule_counts["filter"]
    assert len(re.findall(r"^-A PREROUTING .*-j KUBE-SERVICES", ipt.save("nat"), re.MULTILINE)) == 1
    # The kernel keeps the probability as a 32-bit fraction; -save prints it back with 11 decimals.
    assert "--probability 0.33333333349" in ipt.save("nat")
    assert "-j MASQUERADE --random-fully" in ipt.save("nat")
    assert kernel_trace(ipt, Packet(POD, "10.96.0.10", 80)).endpoints == {
        "10.244.1.2:8080", "10.244.2.3:8080", "10.244.3.4:8080"}
    assert kernel_trace(ipt, Packet("203.0.113.5", "192.168.77.10", 30080)).masqueraded is True
    assert kernel_trace(ipt, Packet(POD, "10.96.0.12", 80)).verdicts == {"REJECT"}
    assert kernel_trace(ipt, Packet(POD, "10.96.0.53", 53, "udp")).endpoints == {"10.244.1.9:5353"}

    # 2. Partial sync: one endpoint of WEB replaced; only WEB's chains written.
    second = replace(first_state(), endpoints={**first_state().endpoints,
                                               WEB.name: endpoints("10.244.1.2", "10.244.9.9", "10.244.3.4")})
    partial = render(second, NODE, existing=kube_chains(ipt), changed=frozenset({WEB.name}))
    assert f":{service_chain_name(NODEPORT.name)} " not in partial.text  # declared only when written
    ipt.restore(partial.text)
    assert kube_chains(ipt) == partial.chains
    assert endpoint_chain_name(WEB.name, "10.244.2.3:8080") not in ipt.save("nat")
    assert kube_rule_count(ipt, "nat") == render(second, NODE).rule_counts["nat"]
    assert kernel_trace(ipt, Packet(POD, "10.96.0.10", 80)).endpoints == {
        "10.244.1.2:8080", "10.244.9.9:8080", "10.244.3.4:8080"}
    assert kernel_trace(ipt, Packet(POD, "10.96.0.11", 80)).endpoints == {"10.244.1.5:8080"}

    # 3. NODEPORT deleted and EMPTY gets an endpoint: a full sync removes the stale chains with -X.
    third = ProxyState(services={s.name: s for s in (WEB, EMPTY, DNS)},
                       endpoints={**second.endpoints, EMPTY.name: endpoints("10.244.4.4")})
    stale = render(third, NODE, existing=kube_chains(ipt))
    assert f"-X {service_chain_name(NODEPORT.name)}" in stale.text
    ipt.restore(stale.text)
    assert kube_chains(ipt) == stale.chains
    assert service_chain_name(NODEPORT.name) not in ipt.save("nat")
    assert kernel_trace(ipt, Packet(POD, "10.96.0.12", 80)).endpoints == {"10.244.4.4:8080"}
    assert kernel_trace(ipt, Packet(POD, "10.96.0.11", 80)).endpoints == set()

    # 4. A restore that fails (a jump to a chain that is not there) changes nothing (every chain, counter
    # and rule of the table; only the save's "# Generated ... on <time>" comments may differ).
    before = saved_table(ipt, "nat")
    with pytest.raises(IptablesError):
        ipt.restore("*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -j KUBE-SVC-DOESNOTEXIST0000\nCOMMIT\n")
    assert saved_table(ipt, "nat") == before


@pytest.mark.parametrize("mode", [pytest.param(Mode.LEGACY, id="legacy"), pytest.param(Mode.NFT, id="nft")])
def test_leading_zero_addresses_load_after_normalisation(mode: Mode, netns) -> None:
    """An old Service's `192.0.2.099` (valid for Go's sloppy parser, refused by iptables, which reads octets
    with a leading zero as octal) reaches the kernel as 192.0.2.99 and routes; the raw text would fail the
    whole restore."""
    ipt = Iptables(backend(mode), in_netns(netns(mode.value[:3])))
    with pytest.raises(IptablesError):
        ipt.restore("*nat\n:KUBE-ZERO-TEST - [0:0]\n-A KUBE-ZERO-TEST -d 192.0.2.099/32 -j RETURN\nCOMMIT\n")
    service = {"metadata": {"namespace": "ns", "name": "old"},
               "spec": {"clusterIP": "10.96.0.020", "externalIPs": ["192.0.2.099", "192.0.2.010"],
                        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
               "status": {"loadBalancer": {"ingress": [{"ip": "198.51.100.007"}]}}}
    (port,) = service_ports(service)
    st = ProxyState(services={port.name: port}, endpoints={port.name: endpoints("10.244.1.2")})
    ipt.restore(render(st, NODE).text)
    for jump in jump_rules(NODE):
        ipt.insert_rule(jump.table, jump.chain, jump.rule)
    saved = ipt.save("nat")
    assert "192.0.2.99/32" in saved and "192.0.2.10/32" in saved and "198.51.100.7/32" in saved
    for destination in ("10.96.0.20", "192.0.2.99", "192.0.2.10", "198.51.100.7"):
        assert kernel_trace(ipt, Packet("203.0.113.5", destination, 80)).endpoints == {"10.244.1.2:8080"}
