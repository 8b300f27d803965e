"""hostPort rules (nodeagent/network/hostport.py) and their manager (hostport_manager.py) against the
in-memory iptables: which ports a pod asks for, clashes, upstream's chain names, what a packet does
through the rendered chains, and the add / remove / restart resync / down life cycle."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodeagent.network import hostport, hostport_manager
from nodeagent.network.hostport import HostportError, PodPortMapping, PortMapping
from nodeagent.network.hostport_manager import HostportManager
from tests.support.fake_iptables import FakeIptables

PORTALS = ("-m", "comment", "--comment", "kube hostport portals", "-m", "addrtype", "--dst-type", "LOCAL",
           "-j", "KUBE-HOSTPORTS")


def pod(name: str, *ports: dict[str, Any], namespace: str = "ns", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "app", "ports": list(ports)}], **spec}}


# ---- which ports -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("ports", "expected"), [
    pytest.param([{"containerPort": 80}], (), id="no-hostport"),
    pytest.param([{"containerPort": 80, "hostPort": 0}], (), id="hostport-zero"),
    pytest.param([{"containerPort": 80, "hostPort": 8080}], (PortMapping(8080, 80, "TCP", ""),), id="tcp-default"),
    pytest.param([{"containerPort": 53, "hostPort": 5353, "protocol": "UDP", "hostIP": "10.0.0.2"}],
                 (PortMapping(5353, 53, "UDP", "10.0.0.2"),), id="udp-hostip"),
    pytest.param([{"containerPort": 80, "hostPort": 8080}, {"containerPort": 80, "hostPort": 8080, "protocol": "UDP"}],
                 (PortMapping(8080, 80, "TCP"), PortMapping(8080, 80, "UDP")), id="tcp-and-udp-same-port"),
])
def test_port_mappings(ports: list[dict[str, Any]], expected: tuple[PortMapping, ...]) -> None:
    assert hostport.port_mappings(pod("p", *ports)) == expected


def test_host_network_pods_have_no_mappings_and_bad_values_are_refused() -> None:
    assert hostport.port_mappings(pod("p", {"containerPort": 80, "hostPort": 80}, hostNetwork=True)) == ()
    with pytest.raises(HostportError, match="hostIP"):
        hostport.port_mappings(pod("p", {"containerPort": 80, "hostPort": 80, "hostIP": "nope"}))
    with pytest.raises(HostportError, match="protocol"):
        hostport.port_mappings(pod("p", {"containerPort": 80, "hostPort": 80, "protocol": "ICMP"}))
    with pytest.raises(HostportError, match="out of range"):
        hostport.port_mappings(pod("p", {"containerPort": 80, "hostPort": 70000}))


# ---- clashes -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("mine", "theirs", "clash"), [
    pytest.param(PortMapping(80, 1), PortMapping(80, 2), True, id="same-port-tcp"),
    pytest.param(PortMapping(80, 1, "TCP"), PortMapping(80, 1, "UDP"), False, id="other-protocol"),
    pytest.param(PortMapping(80, 1), PortMapping(81, 1), False, id="other-port"),
    pytest.param(PortMapping(80, 1, host_ip="10.0.0.1"), PortMapping(80, 1), True, id="wildcard-covers-ip"),
    pytest.param(PortMapping(80, 1, host_ip="10.0.0.1"), PortMapping(80, 1, host_ip="10.0.0.2"), False,
                 id="two-different-ips"),
    pytest.param(PortMapping(80, 1, host_ip="10.0.0.1"), PortMapping(80, 1, host_ip="10.0.0.1"), True,
                 id="same-ip"),
])
def test_conflicts(mine: PortMapping, theirs: PortMapping, clash: bool) -> None:
    candidate = PodPortMapping("sb-a", "a_ns", "10.244.0.2", (mine,))
    other = PodPortMapping("sb-b", "b_ns", "10.244.0.3", (theirs,))
    problems = hostport.conflicts(candidate, [other])
    assert bool(problems) is clash
    if clash:
        assert problems[0].startswith(f"cannot open hostport {mine.describe()} for pod a_ns: already used by pod b_ns")
    assert hostport.conflicts(candidate, [candidate]) == []  # its own sandbox never clashes


def test_chain_name_is_upstreams_hash() -> None:
    # upstream getHostportChain: base32(sha256(id + hostPort + protocol + hostIP))[:16]
    import base64
    import hashlib

    digest = hashlib.sha256(b"abc123" + b"8080" + b"TCP" + b"").digest()
    assert hostport.chain_name("abc123", PortMapping(8080, 80)) == "KUBE-HP-" + base64.b32encode(digest).decode()[:16]
    assert hostport.chain_name("abc123", PortMapping(8080, 80, "UDP")) != hostport.chain_name(
        "abc123", PortMapping(8080, 80))
    assert len(hostport.chain_name("x", PortMapping(1, 1))) <= 28


# ---- what a packet does ------------------------------------------------------------------------------

def trace(fake: FakeIptables, *, src: str, dst: str, proto: str, dport: int, local: bool = True) -> tuple[str, bool]:
    """Follow a packet from PREROUTING through the nat rules the fake holds: (DNAT target or "", marked)."""
    nat = fake.tables["nat"]
    if not local or PORTALS not in nat["PREROUTING"]:
        return "", False
    marked = False
    for rule in nat["KUBE-HOSTPORTS"]:
        if rule[rule.index("-p") + 1] != proto.lower() or int(rule[rule.index("--dport") + 1]) != dport:
            continue
        for hp in nat[rule[-1]]:
            if "-s" in hp and hp[hp.index("-s") + 1] != src:
                continue
            if "-d" in hp and hp[hp.index("-d") + 1] != dst:
                continue
            if hp[-1] == "KUBE-MARK-MASQ":
                marked = True
                continue
            return hp[-1].split("=", 1)[1], marked
    return "", marked


def test_packets_are_dnated_to_the_pod_and_hairpin_is_marked(tmp_path) -> None:
    fake = FakeIptables()
    manager = HostportManager(fake, tmp_path / "hp.json")
    manager.add("sb-a", pod("a", {"containerPort": 80, "hostPort": 18080},
                            {"containerPort": 53, "hostPort": 5353, "protocol": "UDP"}), "10.244.1.5")
    manager.add("sb-b", pod("b", {"containerPort": 8000, "hostPort": 9000, "hostIP": "192.168.7.2"}), "10.244.1.6")
    assert trace(fake, src="192.168.7.9", dst="192.168.7.2", proto="TCP", dport=18080) == ("10.244.1.5:80", False)
    assert trace(fake, src="192.168.7.9", dst="192.168.7.2", proto="UDP", dport=5353) == ("10.244.1.5:53", False)
    assert trace(fake, src="192.168.7.9", dst="192.168.7.2", proto="UDP", dport=18080) == ("", False)
    assert trace(fake, src="10.244.1.5", dst="192.168.7.2", proto="TCP", dport=18080) == ("10.244.1.5:80", True)
    assert trace(fake, src="192.168.7.9", dst="192.168.7.2", proto="TCP", dport=9000) == ("10.244.1.6:8000", False)
    assert trace(fake, src="192.168.7.9", dst="192.168.7.3", proto="TCP", dport=9000) == ("", False)  # other hostIP
    assert trace(fake, src="192.168.7.9", dst="8.8.8.8", proto="TCP", dport=18080, local=False) == ("", False)
    assert ("nat", "OUTPUT", PORTALS) in fake.jumps
    comment = fake.tables["nat"]["KUBE-HOSTPORTS"][0][3]
    assert comment == "a_ns hostport 18080"


# ---- the manager's life cycle -----------------------------------------------------------------------

def hp_chains(fake: FakeIptables) -> set[str]:
    return {c for c in fake.chains("nat") if hostport.is_hostport_chain(c)}


def test_add_refuses_a_clash_and_changes_nothing(tmp_path) -> None:
    fake = FakeIptables()
    manager = HostportManager(fake, tmp_path / "hp.json")
    manager.add("sb-a", pod("a", {"containerPort": 80, "hostPort": 18080}), "10.244.1.5")
    before = {c: list(r) for c, r in fake.tables["nat"].items()}
    with pytest.raises(HostportError, match="cannot open hostport 18080/TCP for pod b_ns: already used by pod a_ns"):
        manager.add("sb-b", pod("b", {"containerPort": 81, "hostPort": 18080}), "10.244.1.6")
    assert fake.tables["nat"] == before
    assert set(manager.entries()) == {"sb-a"}
    manager.add("sb-b", pod("b", {"containerPort": 81, "hostPort": 18080, "protocol": "UDP"}), "10.244.1.6")
    assert len(fake.tables["nat"]["KUBE-HOSTPORTS"]) == 2


def test_pods_without_hostports_touch_nothing(tmp_path) -> None:
    fake = FakeIptables()
    manager = HostportManager(fake, tmp_path / "hp.json")
    assert manager.add("sb-a", pod("a", {"containerPort": 80}), "10.244.1.5") == ()
    assert manager.remove("sb-a") is False
    manager.start([])
    assert not [call for call in fake.calls if call[0] != "save"]
    assert hp_chains(fake) == set()


def test_remove_deletes_the_pods_chains_and_the_last_one_everything(tmp_path) -> None:
    fake = FakeIptables()
    manager = HostportManager(fake, tmp_path / "hp.json")
    manager.add("sb-a", pod("a", {"containerPort": 80, "hostPort": 18080}), "10.244.1.5")
    manager.add("sb-b", pod("b", {"containerPort": 80, "hostPort": 18081}), "10.244.1.6")
    chain_a = hostport.chain_name("sb-a", PortMapping(18080, 80))
    assert chain_a in hp_chains(fake)
    assert manager.remove("sb-a") is True
    assert chain_a not in hp_chains(fake) and len(fake.tables["nat"]["KUBE-HOSTPORTS"]) == 1
    assert manager.remove("sb-a") is False
    manager.remove("sb-b")
    assert hp_chains(fake) == set()
    assert not any(PORTALS == rule for _, _, rule in fake.jumps)
    assert "KUBE-MARK-MASQ" in fake.chains("nat")  # not ours to delete: the proxy's cleanup owns it


def test_mark_masq_chain_is_left_alone_where_the_proxy_made_it(tmp_path) -> None:
    fake = FakeIptables()
    fake.restore("*nat\n:KUBE-MARK-MASQ - [0:0]\n-A KUBE-MARK-MASQ -j MARK --or-mark 0x8000\nCOMMIT\n")
    HostportManager(fake, None).add("sb-a", pod("a", {"containerPort": 80, "hostPort": 18080}), "10.244.1.5")
    assert fake.tables["nat"]["KUBE-MARK-MASQ"] == [("-j", "MARK", "--or-mark", "0x8000")]
    assert ":KUBE-MARK-MASQ" not in fake.restores[-1]


def test_restart_keeps_live_sandboxes_and_removes_stale_chains(tmp_path) -> None:
    fake = FakeIptables()
    path = tmp_path / "hp.json"
    first = HostportManager(fake, path)
    first.add("sb-live", pod("a", {"containerPort": 80, "hostPort": 18080}), "10.244.1.5")
    first.add("sb-gone", pod("b", {"containerPort": 80, "hostPort": 18081}), "10.244.1.6")
    # a chain some earlier run left that no state knows of
    fake.restore("*nat\n:KUBE-HP-AAAAAAAAAAAAAAAA - [0:0]\nCOMMIT\n")
    fake.tables["nat"]["PREROUTING"].remove(PORTALS)  # and a jump someone deleted
    assert set(json.loads(path.read_text())) == {"sb-live", "sb-gone"}

    second = HostportManager(fake, path)
    assert second.start(["sb-live", "sb-other"]) == ["sb-gone"]
    assert hp_chains(fake) == {"KUBE-HOSTPORTS", hostport.chain_name("sb-live", PortMapping(18080, 80))}
    assert ("nat", "PREROUTING", PORTALS) in fake.jumps
    assert set(json.loads(path.read_text())) == {"sb-live"}


def test_failed_restore_keeps_the_state_as_it_was(tmp_path) -> None:
    fake = FakeIptables()
    manager = HostportManager(fake, tmp_path / "hp.json")
    fake.fail_restores.append("iptables-restore: line 3 failed")
    with pytest.raises(Exception, match="line 3"):
        manager.add("sb-a", pod("a", {"containerPort": 80, "hostPort": 18080}), "10.244.1.5")
    assert manager.entries() == {}
    assert not (tmp_path / "hp.json").exists()


def test_remove_rules_takes_every_copy_of_the_jumps_and_only_hostport_chains(tmp_path) -> None:
    fake = FakeIptables()
    fake.restore("*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n")
    manager = HostportManager(fake, tmp_path / "hp.json")
    manager.add("sb-a", pod("a", {"containerPort": 80, "hostPort": 18080}), "10.244.1.5")
    fake.tables["nat"]["OUTPUT"].append(PORTALS)  # a duplicate jump
    manager.remove_all()
    assert hp_chains(fake) == set()
    assert not any(rule == PORTALS for _, _, rule in fake.jumps)
    assert "KUBE-SERVICES" in fake.chains("nat")
    assert not (tmp_path / "hp.json").exists()
    hostport_manager.remove_rules(fake)  # again: nothing to do, no error
