"""The pod forwarding/masquerade rules: rendered text, packets traced through it, and apply/remove
against a recording iptables (the real one is in tests/integration/test_pod_network.py)."""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import dataclass

import pytest

from nodeagent.network import rules
from nodeagent.network.rules import PodRulesConfig

CONFIG = PodRulesConfig(bridge="cbr0", pod_cidr="10.244.3.0/24", cluster_cidr="10.244.0.0/16")


def test_render_declares_both_chains_in_their_tables():
    text = rules.render(CONFIG)
    assert text.splitlines()[:2] == ["*filter", ":KUBE-POD-FORWARD - [0:0]"]
    assert "*nat\n:KUBE-POD-MASQ - [0:0]\n" in text
    assert text.count("COMMIT") == 2 and text.endswith("COMMIT\n")
    assert '-A KUBE-POD-FORWARD -i cbr0 -m comment --comment "from pods on the bridge" -j ACCEPT' in text
    # nothing but our two chains is named: no built-in chain, no jump (jumps are ensured with -C/-I)
    assert {line.split()[1] for line in text.splitlines() if line.startswith("-A")} == {"KUBE-POD-FORWARD",
                                                                                        "KUBE-POD-MASQ"}


def test_removal_flushes_then_deletes_only_our_chains():
    text = rules.render_removal(CONFIG)
    assert text == ("*filter\n:KUBE-POD-FORWARD - [0:0]\n-X KUBE-POD-FORWARD\nCOMMIT\n"
                    "*nat\n:KUBE-POD-MASQ - [0:0]\n-X KUBE-POD-MASQ\nCOMMIT\n")


@pytest.mark.parametrize("changes, message", [
    pytest.param({"forward_chain": "KUBE-FORWARD"}, "upstream", id="kube-proxy-forward"),
    pytest.param({"masq_chain": "KUBE-POSTROUTING"}, "upstream", id="kube-proxy-postrouting"),
    pytest.param({"masq_chain": "KUBE-SVC-ABCDEF"}, "upstream", id="service-chain-prefix"),
    pytest.param({"forward_chain": "DOCKER-USER"}, "KUBE-", id="not-ours"),
    pytest.param({"forward_chain": "KUBE-" + "X" * 24}, "at most 28", id="too-long"),
    pytest.param({"masq_chain": "KUBE-POD-FORWARD"}, "different names", id="same-name"),
    pytest.param({"pod_cidr": "10.245.0.0/24"}, "not inside", id="pod-cidr-outside-cluster"),
    pytest.param({"bridge": "a-much-too-long-bridge"}, "1 to 15", id="bridge-name"),
])
def test_config_refuses_collisions_and_bad_names(changes, message):
    fields = {"bridge": "cbr0", "pod_cidr": "10.244.3.0/24", "cluster_cidr": "10.244.0.0/16", **changes}
    with pytest.raises(ValueError, match=message):
        PodRulesConfig(**fields)


def test_a_test_run_chain_name_fits():
    config = PodRulesConfig(bridge="sktest1234abcd", pod_cidr="10.244.9.0/24", cluster_cidr="10.244.0.0/16",
                            forward_chain="KUBE-SKTEST-1234abcd-FWD", masq_chain="KUBE-SKTEST-1234abcd-MASQ")
    text = rules.render(config)
    assert ":KUBE-SKTEST-1234abcd-FWD - [0:0]" in text and ":KUBE-SKTEST-1234abcd-MASQ - [0:0]" in text
    assert "-A KUBE-SKTEST-1234abcd-FWD -i sktest1234abcd " in text


# --- packets traced through the rendered chains --------------------------------------------------------


@dataclass(frozen=True)
class Packet:
    src: str
    dst: str
    in_if: str = ""
    out_if: str = ""
    dst_local: bool = False


def _matches(args: list[str], packet: Packet) -> bool:
    """Evaluate the matches our renderer uses (-s, -d, -i, -o, addrtype LOCAL, comments; `!` negates)."""
    i, negate = 0, False
    while i < len(args):
        arg = args[i]
        if arg == "!":
            negate, i = True, i + 1
            continue
        if arg in ("-s", "-d"):
            address = packet.src if arg == "-s" else packet.dst
            hit = ipaddress.ip_address(address) in ipaddress.ip_network(args[i + 1])
            i += 2
        elif arg in ("-i", "-o"):
            hit = (packet.in_if if arg == "-i" else packet.out_if) == args[i + 1]
            i += 2
        elif args[i:i + 2] == ["-m", "comment"]:
            i, hit = i + 4, True
        elif args[i:i + 4] == ["-m", "addrtype", "--dst-type", "LOCAL"]:
            i, hit = i + 4, packet.dst_local
        else:
            raise AssertionError(f"the tracer does not know {arg!r}")
        if hit == negate:
            return False
        negate = False
    return True


def trace(text: str, chain: str, packet: Packet) -> str:
    """The verdict of `chain` for `packet`: the first matching rule's target, or RETURN at the end."""
    for line in text.splitlines():
        words = shlex.split(line)
        if words[:2] == ["-A", chain]:
            j = words.index("-j")
            if _matches(words[2:j], packet):
                return words[j + 1]
    return "RETURN"


@pytest.mark.parametrize("packet, verdict", [
    pytest.param(Packet("10.244.3.5", "10.244.3.6", "cbr0", "cbr0"), "ACCEPT", id="pod-to-pod-same-bridge"),
    pytest.param(Packet("10.244.3.5", "192.0.2.10", "cbr0", "eth0"), "ACCEPT", id="pod-to-world"),
    pytest.param(Packet("192.0.2.10", "10.244.3.5", "eth0", "cbr0"), "ACCEPT", id="world-to-pod"),
    pytest.param(Packet("10.244.9.5", "10.244.3.5", "tun0", "cbr0"), "ACCEPT", id="other-node-pod-in"),
    pytest.param(Packet("10.244.9.5", "10.244.4.5", "tun0", "tun1"), "ACCEPT", id="cluster-transit"),
    pytest.param(Packet("172.17.0.2", "192.0.2.10", "docker0", "eth0"), "RETURN", id="docker-traffic-untouched"),
])
def test_forward_chain_verdicts(packet, verdict):
    assert trace(rules.render(CONFIG), "KUBE-POD-FORWARD", packet) == verdict


@pytest.mark.parametrize("packet, verdict", [
    pytest.param(Packet("10.244.3.5", "192.0.2.10"), "MASQUERADE", id="pod-to-outside-masqueraded"),
    pytest.param(Packet("10.244.3.5", "10.244.3.6"), "RETURN", id="pod-to-local-pod-keeps-source"),
    pytest.param(Packet("10.244.3.5", "10.244.9.6"), "RETURN", id="pod-to-remote-pod-keeps-source"),
    pytest.param(Packet("10.244.3.5", "192.0.2.2", dst_local=True), "RETURN", id="pod-to-this-host"),
    pytest.param(Packet("172.17.0.2", "192.0.2.10"), "RETURN", id="non-pod-source-untouched"),
    pytest.param(Packet("10.244.9.5", "192.0.2.10"), "RETURN", id="other-nodes-pods-not-ours"),
])
def test_masquerade_chain_verdicts(packet, verdict):
    assert trace(rules.render(CONFIG), "KUBE-POD-MASQ", packet) == verdict


# --- apply / remove against a recording iptables ---------------------------------------------------------


class RecordingIptables:
    def __init__(self) -> None:
        self.rules: dict[tuple[str, str], list[tuple[str, ...]]] = {}
        self.calls: list[tuple] = []

    def restore(self, text: str) -> None:
        self.calls.append(("restore", text))

    def has_rule(self, table, chain, rule) -> bool:
        return tuple(rule) in self.rules.get((table, chain), [])

    def insert_rule(self, table, chain, rule) -> None:
        self.calls.append(("insert", table, chain))
        self.rules.setdefault((table, chain), []).insert(0, tuple(rule))

    def delete_rule(self, table, chain, rule) -> None:
        self.calls.append(("delete", table, chain))
        self.rules[(table, chain)].remove(tuple(rule))


def test_apply_loads_chains_before_jumping_to_them_and_is_idempotent():
    ipt = RecordingIptables()
    rules.apply(ipt, CONFIG)
    rules.apply(ipt, CONFIG)
    assert ipt.calls[0] == ("restore", rules.render(CONFIG))
    assert [c for c in ipt.calls if c[0] == "insert"] == [("insert", "filter", "FORWARD"),
                                                          ("insert", "nat", "POSTROUTING")]
    assert all(len(v) == 1 for v in ipt.rules.values())


def test_remove_deletes_every_copy_of_our_jumps_then_the_chains():
    ipt = RecordingIptables()
    jump = rules.jump_rules(CONFIG)[0]
    ipt.rules[("filter", "FORWARD")] = [jump.rule, ("-j", "DOCKER-USER"), jump.rule]
    rules.remove(ipt, CONFIG)
    assert ipt.rules[("filter", "FORWARD")] == [("-j", "DOCKER-USER")]
    assert ipt.calls[-1] == ("restore", rules.render_removal(CONFIG))
