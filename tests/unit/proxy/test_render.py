"""proxy/render.py: what the rendered rules do to packets (traced with tests/support/packet_trace.py, as
upstream's proxier_test.go packet-flow tests), plus the text-level contracts: upstream's line shapes,
partial sync, stale chain deletion, only KUBE-* chains, golden files, speed.

Golden files live in tests/unit/proxy/golden/*.txt. After an intended change to the rendering, regenerate
them with `SLIMKUBE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/unit/proxy/test_render.py` and
review the diff.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest

from proxy.chains import endpoint_chain_name, external_chain_name, local_chain_name, service_chain_name
from proxy.model import (
    EndpointInfo,
    NodeConfig,
    ProxyState,
    ServicePortInfo,
    ServicePortName,
    endpoint_slice_by_port,
    service_ports,
)
from proxy.render import jump_rules, render
from tests.support.packet_trace import Netfilter, Packet, Trace

GOLDEN = Path(__file__).parent / "golden"
NODE_IP = "192.168.1.10"
NODE = NodeConfig("node-a", node_ips=(NODE_IP,), cluster_cidr="10.244.0.0/16")
POD = "10.244.7.7"          # a pod on some node, inside the cluster CIDR
OUTSIDE = "203.0.113.5"     # a client off the cluster


def spn(name: str, port: str = "http", protocol: str = "TCP") -> ServicePortName:
    return ServicePortName("ns", name, port, protocol)


def svc(name: str, ip: str, *, port: int = 80, port_name: str = "http", protocol: str = "TCP",
        **fields) -> ServicePortInfo:
    return ServicePortInfo(name=spn(name, port_name, protocol), cluster_ip=ip, port=port, protocol=protocol,
                           **fields)


def eps(*addresses: str, ready: bool = True, local: tuple[str, ...] = ()) -> list[EndpointInfo]:
    result = []
    for address in addresses:
        ip, port = address.rsplit(":", 1)
        result.append(EndpointInfo(ip, int(port), ready=ready, is_local=ip in local))
    return result


def state(*entries: tuple[ServicePortInfo, list[EndpointInfo]]) -> ProxyState:
    return ProxyState({s.name: s for s, _ in entries}, {s.name: e for s, e in entries})


def run(st: ProxyState, packet: Packet, node: NodeConfig = NODE) -> Trace:
    tables = Netfilter(node_ips=node.node_ips)
    tables.restore(render(st, node).text)
    tables.add_jumps(jump_rules(node))
    return tables.trace(packet)


WEB = svc("web", "10.96.0.10")
WEB_EPS = eps("10.244.1.2:8080", "10.244.2.3:8080")
BOTH = {"10.244.1.2:8080", "10.244.2.3:8080"}
NODEPORT = svc("np", "10.96.0.11", node_port=30080, external_ips=("192.0.2.1",),
               load_balancer_ips=("198.51.100.7",))
LOCAL_POLICY = svc("loc", "10.96.0.12", node_port=30081, external_policy_local=True)
LOCAL_EPS = eps("10.244.0.4:8080", "10.244.2.3:8080", local=("10.244.0.4",))


# (id, state, packet, node, expected endpoints, masqueraded)
FLOWS = [
    ("clusterip-from-pod", state((WEB, WEB_EPS)), Packet(POD, "10.96.0.10", 80), NODE, BOTH, False),
    ("clusterip-from-host", state((WEB, WEB_EPS)), Packet(NODE_IP, "10.96.0.10", 80, local=True), NODE, BOTH, True),
    ("clusterip-off-cluster-source", state((WEB, WEB_EPS)), Packet(OUTSIDE, "10.96.0.10", 80), NODE, BOTH, True),
    ("clusterip-wrong-port", state((WEB, WEB_EPS)), Packet(POD, "10.96.0.10", 81), NODE, set(), False),
    ("masquerade-all", state((WEB, WEB_EPS)), Packet(POD, "10.96.0.10", 80),
     replace(NODE, masquerade_all=True), BOTH, True),
    ("no-cluster-cidr-no-masquerade", state((WEB, WEB_EPS)), Packet(OUTSIDE, "10.96.0.10", 80),
     replace(NODE, cluster_cidr=""), BOTH, False),
    ("nodeport-node-ip", state((NODEPORT, WEB_EPS)), Packet(OUTSIDE, NODE_IP, 30080), NODE, BOTH, True),
    ("nodeport-from-pod", state((NODEPORT, WEB_EPS)), Packet(POD, NODE_IP, 30080), NODE, BOTH, True),
    ("nodeport-localhost", state((NODEPORT, WEB_EPS)), Packet("127.0.0.1", "127.0.0.1", 30080, local=True),
     NODE, BOTH, True),
    ("nodeport-localhost-off", state((NODEPORT, WEB_EPS)), Packet("127.0.0.1", "127.0.0.1", 30080, local=True),
     replace(NODE, localhost_nodeports=False), set(), False),
    ("nodeport-addresses", state((NODEPORT, WEB_EPS)), Packet(OUTSIDE, NODE_IP, 30080),
     replace(NODE, nodeport_addresses=("192.168.1.0/24",)), BOTH, True),
    ("nodeport-addresses-other-ip", state((NODEPORT, WEB_EPS)), Packet(OUTSIDE, "10.0.0.9", 30080),
     replace(NODE, node_ips=(NODE_IP, "10.0.0.9"), nodeport_addresses=("192.168.1.0/24",)), set(), False),
    ("external-ip", state((NODEPORT, WEB_EPS)), Packet(OUTSIDE, "192.0.2.1", 80), NODE, BOTH, True),
    ("lb-ingress", state((NODEPORT, WEB_EPS)), Packet(OUTSIDE, "198.51.100.7", 80), NODE, BOTH, True),
    ("affinity", state((replace(WEB, session_affinity_seconds=60), WEB_EPS)), Packet(POD, "10.96.0.10", 80),
     NODE, BOTH, False),
    ("not-ready-skipped", state((WEB, WEB_EPS + eps("10.244.3.3:8080", ready=False))),
     Packet(POD, "10.96.0.10", 80), NODE, BOTH, False),
    ("udp", state((svc("dns", "10.96.0.53", port=53, port_name="dns", protocol="UDP"), eps("10.244.1.9:5353"))),
     Packet(POD, "10.96.0.53", 53, "udp"), NODE, {"10.244.1.9:5353"}, False),
    ("udp-not-tcp", state((svc("dns", "10.96.0.53", port=53, port_name="dns", protocol="UDP"),
                           eps("10.244.1.9:5353"))), Packet(POD, "10.96.0.53", 53, "tcp"), NODE, set(), False),
    ("many-endpoints", state((WEB, eps(*(f"10.244.5.{i}:8080" for i in range(1, 41))))),
     Packet(POD, "10.96.0.10", 80), NODE, {f"10.244.5.{i}:8080" for i in range(1, 41)}, False),
    ("local-policy-external", state((LOCAL_POLICY, LOCAL_EPS)), Packet(OUTSIDE, NODE_IP, 30081), NODE,
     {"10.244.0.4:8080"}, False),
    ("local-policy-from-pod", state((LOCAL_POLICY, LOCAL_EPS)), Packet(POD, NODE_IP, 30081), NODE,
     {"10.244.0.4:8080", "10.244.2.3:8080"}, False),
    ("local-policy-from-host", state((LOCAL_POLICY, LOCAL_EPS)), Packet(NODE_IP, NODE_IP, 30081, local=True),
     NODE, {"10.244.0.4:8080", "10.244.2.3:8080"}, True),
    ("local-policy-cluster-ip", state((LOCAL_POLICY, LOCAL_EPS)), Packet(POD, "10.96.0.12", 80), NODE,
     {"10.244.0.4:8080", "10.244.2.3:8080"}, False),
]


@pytest.mark.parametrize(("st", "packet", "node", "endpoints", "masquerade"),
                         [pytest.param(*flow[1:], id=flow[0]) for flow in FLOWS])
def test_packet_flows(st: ProxyState, packet: Packet, node: NodeConfig, endpoints: set[str],
                      masquerade: bool) -> None:
    result = run(st, packet, node)
    assert result.verdicts == {"ACCEPT"}
    assert result.endpoints == endpoints
    assert result.masqueraded is masquerade


def test_multi_port_service_routes_each_port() -> None:
    http, metrics = svc("multi", "10.96.0.20", port=80, port_name="http"), \
        svc("multi", "10.96.0.20", port=9090, port_name="metrics")
    st = state((http, eps("10.244.1.2:8080")), (metrics, eps("10.244.1.2:9100")))
    assert run(st, Packet(POD, "10.96.0.20", 80)).endpoints == {"10.244.1.2:8080"}
    assert run(st, Packet(POD, "10.96.0.20", 9090)).endpoints == {"10.244.1.2:9100"}
    assert service_chain_name(http.name) != service_chain_name(metrics.name)


def test_hairpin_masquerades_only_the_pod_reaching_itself() -> None:
    result = run(state((WEB, WEB_EPS)), Packet("10.244.1.2", "10.96.0.10", 80))
    assert result.masquerade_by_destination() == {"10.244.1.2:8080": True, "10.244.2.3:8080": False}


@pytest.mark.parametrize(("packet", "where"), [
    pytest.param(Packet(POD, "10.96.0.30", 80), "KUBE-SERVICES", id="cluster-ip"),
    pytest.param(Packet(NODE_IP, "10.96.0.30", 80, local=True), "KUBE-SERVICES", id="cluster-ip-from-host"),
    pytest.param(Packet(OUTSIDE, NODE_IP, 30090), "KUBE-EXTERNAL-SERVICES", id="nodeport"),
    pytest.param(Packet(OUTSIDE, "192.0.2.30", 80), "KUBE-EXTERNAL-SERVICES", id="external-ip"),
    pytest.param(Packet(OUTSIDE, "198.51.100.30", 80), "KUBE-EXTERNAL-SERVICES", id="lb-ingress"),
])
@pytest.mark.parametrize("endpoints", [pytest.param([], id="none"),
                                       pytest.param(eps("10.244.1.2:8080", ready=False), id="not-ready")])
def test_no_ready_endpoints_rejected_in_filter(packet: Packet, where: str, endpoints: list[EndpointInfo]) -> None:
    empty = svc("empty", "10.96.0.30", node_port=30090, external_ips=("192.0.2.30",),
                load_balancer_ips=("198.51.100.30",))
    st = state((empty, endpoints))
    assert run(st, packet).verdicts == {"REJECT"}
    rendered = render(st, NODE)
    assert "KUBE-SVC-" not in rendered.text and "KUBE-SEP-" not in rendered.text
    assert re.search(rf'^-A {where} -m comment --comment "ns/empty:http has no endpoints" .*-j REJECT$',
                     rendered.text, re.MULTILINE)


def terminating(address: str, *, serving: bool = True, local: bool = False) -> EndpointInfo:
    ip, port = address.rsplit(":", 1)
    return EndpointInfo(ip, int(port), ready=False, serving=serving, terminating=True, is_local=local)


def test_serving_terminating_endpoints_are_the_fallback_when_none_is_ready() -> None:
    web = svc("web", "10.96.0.31", node_port=30091)
    leaving = [terminating("10.244.1.2:8080"), terminating("10.244.1.3:8080", serving=False)]
    st = state((web, leaving))
    assert run(st, Packet(POD, "10.96.0.31", 80)).endpoints == {"10.244.1.2:8080"}
    assert run(st, Packet(OUTSIDE, NODE_IP, 30091)).endpoints == {"10.244.1.2:8080"}
    # one ready endpoint anywhere: terminating ones get no traffic
    st = state((web, [*leaving, *eps("10.244.2.9:8080")]))
    assert run(st, Packet(POD, "10.96.0.31", 80)).endpoints == {"10.244.2.9:8080"}
    # only terminating endpoints that stopped serving: refused as with none
    assert run(state((web, leaving[1:])), Packet(POD, "10.96.0.31", 80)).verdicts == {"REJECT"}


def test_local_policy_falls_back_to_this_nodes_terminating_endpoints() -> None:
    st = state((LOCAL_POLICY, [*eps("10.244.2.3:8080"), terminating("10.244.0.4:8080", local=True)]))
    assert run(st, Packet(OUTSIDE, NODE_IP, 30081)).endpoints == {"10.244.0.4:8080"}
    assert run(st, Packet(POD, "10.96.0.12", 80)).endpoints == {"10.244.2.3:8080"}


def test_local_policy_without_local_endpoints_drops_external_traffic() -> None:
    st = state((LOCAL_POLICY, eps("10.244.2.3:8080")))
    assert run(st, Packet(OUTSIDE, NODE_IP, 30081)).verdicts == {"DROP"}
    assert run(st, Packet(POD, "10.96.0.12", 80)).endpoints == {"10.244.2.3:8080"}


def test_upstream_line_shapes() -> None:
    """Upstream's line shapes (affinity, probability, masquerade, jumps), byte for byte as upstream writes them."""
    st = state((replace(WEB, session_affinity_seconds=10800), eps("10.244.1.2:8080", "10.244.2.3:8080",
                                                                  "10.244.3.4:8080")))
    lines = render(st, NODE).text.splitlines()
    svc_chain = service_chain_name(WEB.name)
    seps = [endpoint_chain_name(WEB.name, a) for a in ("10.244.1.2:8080", "10.244.2.3:8080", "10.244.3.4:8080")]
    expected = [
        "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN",
        "-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000",
        '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE '
        "--random-fully",
        "-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000",
        f'-A KUBE-SERVICES -m comment --comment "ns/web:http cluster IP" -m tcp -p tcp -d 10.96.0.10 --dport 80 '
        f"-j {svc_chain}",
        f'-A {svc_chain} -m comment --comment "ns/web:http cluster IP" -m tcp -p tcp -d 10.96.0.10 --dport 80 '
        "! -s 10.244.0.0/16 -j KUBE-MARK-MASQ",
        f'-A {svc_chain} -m comment --comment "ns/web:http -> 10.244.1.2:8080" -m recent --name {seps[0]} '
        f"--rcheck --seconds 10800 --reap -j {seps[0]}",
        f'-A {svc_chain} -m comment --comment "ns/web:http -> 10.244.1.2:8080" -m statistic --mode random '
        f"--probability 0.3333333333 -j {seps[0]}",
        f'-A {svc_chain} -m comment --comment "ns/web:http -> 10.244.2.3:8080" -m statistic --mode random '
        f"--probability 0.5000000000 -j {seps[1]}",
        f'-A {svc_chain} -m comment --comment "ns/web:http -> 10.244.3.4:8080" -j {seps[2]}',
        f"-A {seps[0]} -m comment --comment ns/web:http -s 10.244.1.2 -j KUBE-MARK-MASQ",
        f"-A {seps[0]} -m comment --comment ns/web:http -m recent --name {seps[0]} --set -m tcp -p tcp -j DNAT "
        "--to-destination 10.244.1.2:8080",
        '-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in '
        'this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS',
    ]
    for line in expected:
        assert line in lines, line
    assert lines[-2].endswith("-j KUBE-NODEPORTS") and lines[-1] == "COMMIT"


def test_comments_dropped_above_1000_endpoints() -> None:
    big = state(*((svc(f"s{i}", f"10.96.1.{i}"), eps(*(f"10.244.{i}.{j}:80" for j in range(1, 11))))
                  for i in range(1, 102)))
    text = render(big, NODE).text
    assert not re.search(r"^-A KUBE-(SEP|SVC)-\S+ -m comment --comment \S+ -(s|m statistic|j)", text, re.MULTILINE)
    assert '"ns/s1:http cluster IP"' in text  # the other comments stay, as upstream
    small = state(*((svc(f"s{i}", f"10.96.1.{i}"), eps(*(f"10.244.{i}.{j}:80" for j in range(1, 11))))
                    for i in range(1, 101)))
    assert "-m comment --comment ns/s1:http -s 10.244.1.1" in render(small, NODE).text


def test_probabilities_for_many_endpoints() -> None:
    text = render(state((WEB, eps(*(f"10.244.5.{i}:8080" for i in range(1, 11))))), NODE).text
    found = re.findall(r"--probability (\S+)", text)
    assert found == ["%0.10f" % (1 / n) for n in range(10, 1, -1)]


def full_state() -> ProxyState:
    return state((WEB, WEB_EPS), (NODEPORT, eps("10.244.1.5:80")),
                 (svc("other", "10.96.0.40"), eps("10.244.4.4:80", "10.244.4.5:80")))


def test_partial_sync_writes_only_changed_service_chains() -> None:
    full = render(full_state(), NODE)
    existing = dict(full.chains)
    new_eps = eps("10.244.1.2:8080", "10.244.9.9:8080")  # 10.244.2.3 went away, 10.244.9.9 came
    changed_state = replace(full_state(), endpoints={**full_state().endpoints, WEB.name: new_eps})
    partial = render(changed_state, NODE, existing=existing, changed=frozenset({WEB.name}))

    declared = set(re.findall(r"^:(\S+)", partial.text, re.MULTILINE))
    gone = endpoint_chain_name(WEB.name, "10.244.2.3:8080")
    assert declared - {"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ",
                       "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-PROXY-FIREWALL", "KUBE-FIREWALL"} == {
        service_chain_name(WEB.name), endpoint_chain_name(WEB.name, "10.244.1.2:8080"),
        endpoint_chain_name(WEB.name, "10.244.9.9:8080"), gone}
    assert f"-X {gone}" in partial.text
    # KUBE-SERVICES is whole: every service's cluster IP is in it.
    for ip in ("10.96.0.10", "10.96.0.11", "10.96.0.40"):
        assert f"-d {ip} --dport 80 -j KUBE-" in partial.text
    assert partial.chains["nat"] == render(changed_state, NODE).chains["nat"]

    # Loaded one after the other, as the kernel would keep them with --noflush.
    tables = Netfilter(node_ips=NODE.node_ips)
    tables.restore(full.text)
    tables.restore(partial.text)
    tables.add_jumps(jump_rules(NODE))
    assert tables.trace(Packet(POD, "10.96.0.10", 80)).endpoints == {"10.244.1.2:8080", "10.244.9.9:8080"}
    assert tables.trace(Packet(POD, "10.96.0.40", 80)).endpoints == {"10.244.4.4:80", "10.244.4.5:80"}
    assert tables.trace(Packet(OUTSIDE, NODE_IP, 30080)).endpoints == {"10.244.1.5:80"}
    assert tables.chains("nat") == partial.chains["nat"]


def test_partial_sync_writes_services_missing_from_existing() -> None:
    partial = render(full_state(), NODE, existing={"nat": frozenset()}, changed=frozenset())
    assert f":{service_chain_name(NODEPORT.name)} - [0:0]" in partial.text
    assert f":{external_chain_name(NODEPORT.name)} - [0:0]" in partial.text
    untouched = render(full_state(), NODE, existing=render(full_state(), NODE).chains, changed=frozenset())
    assert "KUBE-SVC-" not in "".join(re.findall(r"^:\S+", untouched.text, re.MULTILINE))


def test_removed_service_chains_deleted() -> None:
    before = render(full_state(), NODE)
    after_state = state((WEB, WEB_EPS))
    existing = {"nat": before.chains["nat"] | {"KUBE-POD-MASQ", "DOCKER", "KUBE-XLB-OLDOLDOLDOLDOLD"},
                "filter": before.chains["filter"] | {"KUBE-POD-FORWARD"}}
    after = render(after_state, NODE, existing=existing)
    deleted = set(re.findall(r"^-X (\S+)$", after.text, re.MULTILINE))
    expected = (before.chains["nat"] - after.chains["nat"]) | {"KUBE-XLB-OLDOLDOLDOLDOLD"}
    assert deleted == expected
    assert all(chain.startswith(("KUBE-SVC-", "KUBE-SEP-", "KUBE-EXT-", "KUBE-XLB-")) for chain in deleted)
    tables = Netfilter()
    tables.restore(before.text)
    tables.restore("*nat\n:KUBE-XLB-OLDOLDOLDOLDOLD - [0:0]\nCOMMIT\n")
    tables.restore(after.text)
    assert tables.chains("nat") == after.chains["nat"]


def test_every_line_names_only_kube_chains() -> None:
    st = full_state()
    for node in (NODE, replace(NODE, localhost_nodeports=False, nodeport_addresses=("192.168.1.0/24",))):
        rendered = render(st, node, existing={"nat": frozenset({"KUBE-SVC-STALESTALESTALE1", "POSTROUTING"})})
        for line in rendered.text.splitlines():
            if line.startswith((":", "-A ", "-X ")):
                chain = line.split()[1] if not line.startswith(":") else line[1:].split()[0]
                assert chain.startswith("KUBE-") and chain not in ("KUBE-POD-FORWARD", "KUBE-POD-MASQ"), line
            else:
                assert line in ("*filter", "*nat", "COMMIT"), line
            for target in re.findall(r"-j (\S+)", line):
                assert target.startswith("KUBE-") or target in {
                    "ACCEPT", "DROP", "REJECT", "RETURN", "MARK", "DNAT", "MASQUERADE"}, line
        counts = {table: len(re.findall(r"^-A ", part, re.MULTILINE))
                  for table, part in zip(("filter", "nat"), rendered.text.split("*nat"), strict=True)}
        assert rendered.rule_counts == counts
        for jump in jump_rules(node):
            assert jump.rule[-1] in rendered.chains[jump.table]
            assert jump.chain in ("PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING")


def test_localhost_nodeports_controls_kube_firewall() -> None:
    assert "KUBE-FIREWALL" in render(full_state(), NODE).chains["filter"]
    assert any(j.rule == ("-j", "KUBE-FIREWALL") for j in jump_rules(NODE))
    off = replace(NODE, localhost_nodeports=False)
    assert "KUBE-FIREWALL" not in render(full_state(), off).text
    assert not any("KUBE-FIREWALL" in j.rule for j in jump_rules(off))
    assert "! -d 127.0.0.0/8 -j KUBE-NODEPORTS" in render(full_state(), off).text


def test_render_of_a_large_state_is_deterministic() -> None:
    # How fast this renders is bench/proxy_sync.py's to measure (a timed assertion fails on a loaded machine).
    services = []
    for i in range(1000):
        services.append((svc(f"s{i}", f"10.96.{i // 250}.{i % 250 + 1}", node_port=30000 + i if i % 10 == 0 else 0),
                         eps(*(f"10.{100 + i // 250}.{i % 250}.{j}:8080" for j in range(1, 11)))))
    big = state(*services)
    first = render(big, NODE)
    assert first.rule_counts["nat"] > 30000
    assert render(big, NODE).text == first.text


def golden_states() -> dict[str, tuple[ProxyState, NodeConfig]]:
    return {
        "clusterip_affinity": (state((replace(WEB, session_affinity_seconds=60), WEB_EPS),
                                     (svc("dns", "10.96.0.53", port=53, port_name="dns", protocol="UDP"),
                                      eps("10.244.1.9:5353"))), NODE),
        "nodeport_external_lb": (state((NODEPORT, WEB_EPS), (LOCAL_POLICY, LOCAL_EPS)),
                                 replace(NODE, nodeport_addresses=("192.168.1.0/24",))),
        "no_endpoints_masquerade_all": (state((svc("empty", "10.96.0.30", node_port=30090,
                                                   external_ips=("192.0.2.30",)), []), (WEB, WEB_EPS)),
                                        replace(NODE, masquerade_all=True, localhost_nodeports=False)),
    }


@pytest.mark.parametrize("name", list(golden_states()))
def test_golden(name: str) -> None:
    st, node = golden_states()[name]
    text = render(st, node).text
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("SLIMKUBE_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs; see this module's docstring to regenerate"


def test_local_policy_chain_names() -> None:
    text = render(state((LOCAL_POLICY, LOCAL_EPS)), NODE).text
    assert f":{local_chain_name(LOCAL_POLICY.name)} - [0:0]" in text
    assert f"-A {external_chain_name(LOCAL_POLICY.name)} -j {local_chain_name(LOCAL_POLICY.name)}" in text


def test_addresses_with_leading_zeros_are_normalised_before_rules_and_hashes() -> None:
    """A Service written before 1.20 may hold `1.2.3.004` style addresses (upstream reads them with
    ParseIPSloppy, in decimal). iptables would read `010` as octal 8 and refuse `099`, failing the whole
    restore; so the model hands the renderer canonical addresses, and the SEP chain hash is the one of the
    canonical `ip:port`."""
    service = {"metadata": {"namespace": "ns", "name": "old"},
               "spec": {"clusterIP": "10.96.0.020", "externalIPs": ["192.0.2.010", "192.0.2.099", "not-an-ip"],
                        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
               "status": {"loadBalancer": {"ingress": [{"ip": "198.51.100.007"}]}}}
    endpoint_slice = {"metadata": {"namespace": "ns", "name": "old-1",
                                   "labels": {"kubernetes.io/service-name": "old"}},
                      "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                      "endpoints": [{"addresses": ["10.244.1.002"]}]}
    (port,) = service_ports(service)
    assert (port.cluster_ip, port.external_ips, port.load_balancer_ips) == (
        "10.96.0.20", ("192.0.2.10", "192.0.2.99"), ("198.51.100.7",))
    backends = endpoint_slice_by_port(endpoint_slice)[port.name]
    assert [b.ip for b in backends] == ["10.244.1.2"]
    st = state((port, backends))
    text = render(st, NODE).text
    assert not re.search(r"\b0\d+\.|\.0\d+\b", text), "an octet with a leading zero reached a rule"
    assert endpoint_chain_name(port.name, "10.244.1.2:8080") in text
    for destination in ("10.96.0.20", "192.0.2.10", "192.0.2.99", "198.51.100.7"):
        assert run(st, Packet(OUTSIDE, destination, 80)).endpoints == {"10.244.1.2:8080"}, destination
