"""The harness's namespace, link and iptables fixtures against the real kernel, and the two facts the
networking code stands on: pyroute2 moves a veth peer into a namespace by fd, and iptables rules
written inside a test namespace never reach the host's tables."""

from __future__ import annotations

import os
import subprocess

from pyroute2 import IPRoute, NetNS

# Link-local /30 inside a namespace this test made: no address outside the machine is ever a target.
HOST_ADDR, NS_ADDR = "169.254.77.1", "169.254.77.2"


def in_ns(ns: str, *cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True)


def test_veth_peer_moved_into_a_namespace_carries_traffic(netns, link_name):
    ns = netns("veth")
    host_end, peer = link_name("h"), link_name("p")
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        with IPRoute() as ipr:
            ipr.link("add", ifname=host_end, kind="veth", peer=peer)
            (peer_index,) = ipr.link_lookup(ifname=peer)
            ipr.link("set", index=peer_index, net_ns_fd=fd)
            (host_index,) = ipr.link_lookup(ifname=host_end)
            ipr.addr("add", index=host_index, address=HOST_ADDR, prefixlen=30)
            ipr.link("set", index=host_index, state="up")
    finally:
        os.close(fd)
    with NetNS(ns) as inside:
        (index,) = inside.link_lookup(ifname=peer)
        inside.link("set", index=index, ifname="eth0")
        inside.addr("add", index=index, address=NS_ADDR, prefixlen=30)
        inside.link("set", index=index, state="up")

    result = in_ns(ns, "busybox", "ping", "-c", "1", "-W", "2", HOST_ADDR)  # busybox-static: always installed
    assert result.returncode == 0, result.stdout + result.stderr


def test_kube_chains_in_a_test_namespace_stay_out_of_the_host(netns, iptables):
    ns = netns("ipt")
    rules = "*nat\n:KUBE-SKTEST-ONLY - [0:0]\n-A KUBE-SKTEST-ONLY -j RETURN\nCOMMIT\n"
    restore = iptables.replace("iptables", "iptables-restore")
    loaded = subprocess.run(["ip", "netns", "exec", ns, restore, "-w", "--noflush"], input=rules,
                            capture_output=True, text=True)
    assert loaded.returncode == 0, loaded.stderr
    assert "-A KUBE-SKTEST-ONLY -j RETURN" in in_ns(ns, iptables, "-w", "-t", "nat", "-S").stdout
    host = subprocess.run([iptables, "-w", "-t", "nat", "-S"], capture_output=True, text=True, check=True).stdout
    assert "KUBE-SKTEST-ONLY" not in host
