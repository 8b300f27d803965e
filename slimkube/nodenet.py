"""The node network of `slimkube up --nodes N` on this host: carry out a `NodesPlan` (slimkube/nodes.py).

`wire` makes, idempotently (a second `up` after Ctrl-C finds everything in place):
1. the node bridge with the host's address (nodeagent/network/bridge.py `ensure_bridge`, which also turns
   on ip_forward);
2. per node: the named network namespace (`ip netns add`, so `ip netns exec NAME` enters it), its
   loopback up, a veth pair with the host end on the bridge and the other end moved in as `eth0` with
   the node's address, a default route via the host's bridge address.
No pod routes: each node's agent makes its own (`--pod-network`, nodeagent/network/backends/).

`unwire` removes them in reverse: namespaces (which takes their `eth0`, pod bridge, pods' veths and their
iptables rules with them), host veths, the bridge.

The commands are iproute2's because the namespaces must be iproute2's named ones (`/run/netns/NAME`) for
`ip netns exec` to enter them; they run through an injected `Run` so the order is unit-tested.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence

from slimkube.nodes import NODE_IFNAME, NodeSpec, NodesPlan


class NodeNetError(RuntimeError):
    """An `ip` command failed; the message has the command and its error."""


Run = Callable[[Sequence[str]], subprocess.CompletedProcess[str]]


def run_ip(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False)


def _check(run: Run, *args: str) -> str:
    done = run(args)
    if done.returncode != 0:
        raise NodeNetError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def netns_exists(name: str, *, run: Run = run_ip) -> bool:
    return name in {line.split()[0] for line in _check(run, "netns", "list").splitlines() if line.strip()}


def link_exists(name: str, *, run: Run = run_ip, netns: str | None = None) -> bool:
    args = (["-n", netns] if netns else []) + ["link", "show", name]
    return run(args).returncode == 0


def ensure_netns(name: str, *, run: Run = run_ip) -> None:
    if not netns_exists(name, run=run):
        _check(run, "netns", "add", name)


def default_route_device(*, run: Run = run_ip) -> str:
    """The device of this namespace's default route ("" when there is none)."""
    for line in _check(run, "route", "show", "default").splitlines():
        words = line.split()
        if "dev" in words[:-1]:
            return words[words.index("dev") + 1]
    return ""


def wire_node(plan: NodesPlan, node: NodeSpec, *, run: Run = run_ip) -> None:
    """Step 2 of the module notes for one node."""
    ensure_netns(node.netns, run=run)
    _check(run, "-n", node.netns, "link", "set", "lo", "up")
    if not link_exists(NODE_IFNAME, run=run, netns=node.netns):
        if link_exists(node.host_veth, run=run):  # a half-made pair from an interrupted start
            _check(run, "link", "del", node.host_veth)
        _check(run, "link", "add", node.host_veth, "type", "veth", "peer", "name", NODE_IFNAME, "netns", node.netns)
    _check(run, "link", "set", node.host_veth, "master", plan.bridge, "up")
    _check(run, "-n", node.netns, "addr", "replace", f"{node.node_ip}/{plan.prefixlen}", "dev", NODE_IFNAME)
    _check(run, "-n", node.netns, "link", "set", NODE_IFNAME, "up")
    _check(run, "-n", node.netns, "route", "replace", "default", "via", plan.host_ip, "dev", NODE_IFNAME)


def wire(plan: NodesPlan, *, ensure_bridge: Callable[[str, str], object], run: Run = run_ip) -> None:
    """Everything in the module notes, for every node of the plan."""
    ensure_bridge(plan.bridge, f"{plan.host_ip}/{plan.prefixlen}")
    for node in plan.nodes:
        wire_node(plan, node, run=run)


def unwire(plan: NodesPlan, *, run: Run = run_ip) -> list[str]:
    """Remove namespaces, host veths and the bridge; returns what could not be removed (never raises
    for one part, so the rest still goes)."""
    errors = []
    for node in plan.nodes:
        if netns_exists(node.netns, run=run):
            done = run(["netns", "del", node.netns])
            if done.returncode != 0:
                errors.append(f"namespace {node.netns}: {done.stderr.strip()}")
    for name in [node.host_veth for node in plan.nodes] + [plan.bridge]:
        if link_exists(name, run=run):
            done = run(["link", "del", name])
            if done.returncode != 0 and link_exists(name, run=run):
                errors.append(f"link {name}: {done.stderr.strip()}")
    return errors
