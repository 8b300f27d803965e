"""The node network's order of `ip` commands (slimkube/nodenet.py), against a fake iproute2."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

import pytest

from slimkube import nodenet, nodes


class FakeIp:
    """Remembers namespaces and links; answers `netns list`, `link show`; records every command."""

    def __init__(self, *, netns: set[str] = frozenset(), links: set[str] = frozenset(), fail: str = "") -> None:
        self.netns, self.links, self.fail = set(netns), set(links), fail
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, args: Sequence[str]) -> subprocess.CompletedProcess:
        args = tuple(args)
        self.calls.append(args)
        where = args[1] if args[0] == "-n" else ""
        rest = args[2:] if where else args
        out, code = "", 0
        if self.fail and self.fail in " ".join(args):
            code = 1
        elif rest[:2] == ("netns", "list"):
            out = "".join(f"{n} (id: 1)\n" for n in sorted(self.netns))
        elif rest[:2] == ("netns", "add"):
            self.netns.add(rest[2])
        elif rest[:2] == ("netns", "del"):
            self.netns.discard(rest[2])
            self.links = {link for link in self.links if not link.startswith(f"{rest[2]}/")}
        elif rest[:2] == ("link", "show"):
            code = 0 if f"{where}/{rest[2]}".lstrip("/") in self.links else 1
        elif rest[:2] == ("link", "add"):  # a bridge, or a veth pair whose peer goes into a namespace
            self.links |= {f"{where}/{rest[2]}".lstrip("/")} | ({f"{rest[-1]}/{rest[7]}"} if "peer" in rest else set())
        elif rest[:2] == ("link", "del"):
            self.links.discard(rest[2])
        return subprocess.CompletedProcess(args, code, out, "boom" if code else "")


PLAN = nodes.plan(3, first_name="h", cluster_cidr="10.244.0.0/16", data_dir="/d")


def test_wire_makes_bridge_namespaces_veths_and_addresses_and_no_pod_routes():
    ip, bridges = FakeIp(), []
    nodenet.wire(PLAN, ensure_bridge=lambda name, cidr: bridges.append((name, cidr)), run=ip)
    assert bridges == [("slimnodes0", "10.250.0.1/24")]
    changes = [c for c in ip.calls if c[-2:] != ("netns", "list") and "show" not in c]
    assert changes[:7] == [
        ("netns", "add", "h-2"),
        ("-n", "h-2", "link", "set", "lo", "up"),
        ("link", "add", "slimnode2", "type", "veth", "peer", "name", "eth0", "netns", "h-2"),
        ("link", "set", "slimnode2", "master", "slimnodes0", "up"),
        ("-n", "h-2", "addr", "replace", "10.250.0.2/24", "dev", "eth0"),
        ("-n", "h-2", "link", "set", "eth0", "up"),
        ("-n", "h-2", "route", "replace", "default", "via", "10.250.0.1", "dev", "eth0"),
    ]
    assert ("-n", "h-3", "route", "replace", "default", "via", "10.250.0.1", "dev", "eth0") in changes
    # each node's agent routes pods itself (nodeagent/network/backends/): the host gets no pod route
    assert not [c for c in changes if c[0] == "route"]


def test_wiring_again_makes_no_second_namespace_or_veth():
    ip = FakeIp()
    nodenet.wire(PLAN, ensure_bridge=lambda *a: None, run=ip)
    ip.calls.clear()
    nodenet.wire(PLAN, ensure_bridge=lambda *a: None, run=ip)
    assert not [c for c in ip.calls if c[:2] in (("netns", "add"), ("link", "add"))]


def test_a_half_made_veth_is_replaced():
    ip = FakeIp(netns={"h-2"}, links={"slimnode2"})
    nodenet.wire_node(PLAN, PLAN.nodes[0], run=ip)
    assert ip.calls.index(("link", "del", "slimnode2")) < ip.calls.index(
        ("link", "add", "slimnode2", "type", "veth", "peer", "name", "eth0", "netns", "h-2"))


def test_a_failing_command_names_itself():
    with pytest.raises(nodenet.NodeNetError, match="ip -n h-2 route replace default via 10.250.0.1 .*boom"):
        nodenet.wire(PLAN, ensure_bridge=lambda *a: None, run=FakeIp(fail="route replace default"))


def test_unwire_removes_namespaces_then_veths_then_the_bridge_and_reports_failures():
    ip = FakeIp(netns={"h-2", "h-3"}, links={"slimnode2", "slimnode3", "slimnodes0"})
    assert nodenet.unwire(PLAN, run=ip) == []
    removals = [c for c in ip.calls if c[1] == "del"]
    assert removals == [("netns", "del", "h-2"), ("netns", "del", "h-3"), ("link", "del", "slimnode2"),
                        ("link", "del", "slimnode3"), ("link", "del", "slimnodes0")]
    assert nodenet.unwire(PLAN, run=FakeIp(netns={"h-2"}, fail="netns del")) == ["namespace h-2: boom"]


@pytest.mark.parametrize(("output", "device"), [
    pytest.param("default via 10.0.0.1 dev eth0 proto dhcp src 10.0.0.5 metric 100\n", "eth0", id="dhcp"),
    pytest.param("default dev wg0 scope link\n", "wg0", id="no-gateway"),
    pytest.param("", "", id="none"),
])
def test_default_route_device(output, device):
    def run(args):
        assert tuple(args) == ("route", "show", "default")
        return subprocess.CompletedProcess(args, 0, output, "")

    assert nodenet.default_route_device(run=run) == device


SUBNETS = nodes.plan(3, first_name="h", cluster_cidr="10.244.0.0/16", data_dir="/d", subnets=2)


def test_subnets_make_a_router_namespace_then_nodes_behind_it_with_no_l2_to_the_host():
    ip, bridges = FakeIp(), []
    nodenet.wire(SUBNETS, ensure_bridge=lambda name, cidr: bridges.append((name, cidr)), run=ip)
    assert bridges == [("slimnodes0", "10.250.0.1/25")]
    changes = [c for c in ip.calls if c[-2:] != ("netns", "list") and "show" not in c]
    assert changes[:13] == [
        ("netns", "add", "h-router"),
        ("-n", "h-router", "link", "set", "lo", "up"),
        ("netns", "exec", "h-router", "sysctl", "-qw", "net.ipv4.ip_forward=1"),
        ("link", "add", "slimnoder", "type", "veth", "peer", "name", "eth0", "netns", "h-router"),
        ("link", "set", "slimnoder", "master", "slimnodes0", "up"),
        ("-n", "h-router", "addr", "replace", "10.250.0.126/25", "dev", "eth0"),
        ("-n", "h-router", "link", "set", "eth0", "up"),
        ("-n", "h-router", "route", "replace", "default", "via", "10.250.0.1", "dev", "eth0"),
        ("-n", "h-router", "link", "add", "subnet1", "type", "bridge"),
        ("-n", "h-router", "addr", "replace", "10.250.0.129/25", "dev", "subnet1"),
        ("-n", "h-router", "link", "set", "subnet1", "up"),
        ("route", "replace", "10.250.0.0/24", "via", "10.250.0.126", "dev", "slimnodes0"),
        ("netns", "add", "h-2"),
    ]
    # node 2 on subnet 1: its veth on the router's bridge, its gateway the router
    assert ("-n", "h-router", "link", "add", "slimnode2", "type", "veth", "peer", "name", "eth0", "netns",
            "h-2") in changes
    assert ("-n", "h-router", "link", "set", "slimnode2", "master", "subnet1", "up") in changes
    assert ("-n", "h-2", "addr", "replace", "10.250.0.130/25", "dev", "eth0") in changes
    assert ("-n", "h-2", "route", "replace", "default", "via", "10.250.0.129", "dev", "eth0") in changes
    # node 3 on subnet 0 with this host: default via the host, the other subnets via the router
    assert ("link", "set", "slimnode3", "master", "slimnodes0", "up") in changes
    assert ("-n", "h-3", "route", "replace", "default", "via", "10.250.0.1", "dev", "eth0") in changes
    assert ("-n", "h-3", "route", "replace", "10.250.0.0/24", "via", "10.250.0.126", "dev", "eth0") in changes
    ip.calls.clear()
    nodenet.wire(SUBNETS, ensure_bridge=lambda *a: None, run=ip)  # again: nothing made twice
    assert not [c for c in ip.calls if "add" in c[:4] and "addr" not in c and "route" not in c]


def test_unwire_removes_the_router_namespace_and_only_the_veths_of_this_host():
    ip = FakeIp(netns={"h-2", "h-3", "h-router"}, links={"slimnode3", "slimnoder", "slimnodes0"})
    assert nodenet.unwire(SUBNETS, run=ip) == []
    removals = [c for c in ip.calls if c[1] == "del"]
    assert removals == [("netns", "del", "h-2"), ("netns", "del", "h-3"), ("netns", "del", "h-router"),
                        ("link", "del", "slimnode3"), ("link", "del", "slimnoder"), ("link", "del", "slimnodes0")]
