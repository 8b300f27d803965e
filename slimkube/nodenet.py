"""The node network of `slimkube up --nodes N` on this host: carry out a `NodesPlan` (slimkube/nodes.py).

`wire` makes, idempotently (a second `up` after Ctrl-C finds everything in place):
1. the node bridge with the host's address (nodeagent/network/bridge.py `ensure_bridge`, which also turns
   on ip_forward);
2. with `--node-subnets` K > 1, the router namespace: its leg `eth0` on the node bridge (host end
   `slimnoder`), forwarding on, a default route via this host, one bridge per other subnet with its
   gateway address; and this host's route to the whole node network via the router;
3. per node: the named network namespace (`ip netns add`, so `ip netns exec NAME` enters it), its
   loopback up, a veth pair with one end on its subnet's bridge (in this host's namespace or the
   router's) and the other moved in as `eth0` with the node's address, a default route via its gateway
   (and, on subnet 0 beside other subnets, the node network via the router).
No pod routes: each node's agent makes its own (`--pod-network`, nodeagent/network/backends/).

`unwire` removes them in reverse: node namespaces (which takes their `eth0`, pod bridge, pods' veths and
their iptables rules with them), the router namespace (its bridges and veths with it), host veths, the
bridge (and this host's route via the router with it).

The commands are iproute2's because the namespaces must be iproute2's named ones (`/run/netns/NAME`) for
`ip netns exec` to enter them; they run through an injected `Run` so the order is unit-tested.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence

from slimkube.nodes import NODE_IFNAME, NodeSpec, NodesPlan, RouterSpec


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


def _veth_into(run: Run, *, where: str, end: str, netns: str) -> None:
    """A veth pair `end` (in namespace `where`, "" = this one) ↔ `eth0` in `netns`, unless `eth0` is there."""
    at = ["-n", where] if where else []
    if not link_exists(NODE_IFNAME, run=run, netns=netns):
        if link_exists(end, run=run, netns=where or None):  # a half-made pair from an interrupted start
            _check(run, *at, "link", "del", end)
        _check(run, *at, "link", "add", end, "type", "veth", "peer", "name", NODE_IFNAME, "netns", netns)


def wire_router(plan: NodesPlan, router: RouterSpec, *, run: Run = run_ip) -> None:
    """Step 2 of the module notes."""
    ensure_netns(router.netns, run=run)
    _check(run, "-n", router.netns, "link", "set", "lo", "up")
    _check(run, "netns", "exec", router.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    _veth_into(run, where="", end=router.host_veth, netns=router.netns)
    _check(run, "link", "set", router.host_veth, "master", plan.bridge, "up")
    _check(run, "-n", router.netns, "addr", "replace", f"{router.address}/{plan.prefixlen}", "dev", NODE_IFNAME)
    _check(run, "-n", router.netns, "link", "set", NODE_IFNAME, "up")
    _check(run, "-n", router.netns, "route", "replace", "default", "via", plan.host_ip, "dev", NODE_IFNAME)
    for subnet in router.subnets:
        if not link_exists(subnet.bridge, run=run, netns=router.netns):
            _check(run, "-n", router.netns, "link", "add", subnet.bridge, "type", "bridge")
        prefixlen = subnet.cidr.split("/")[1]
        _check(run, "-n", router.netns, "addr", "replace", f"{subnet.gateway}/{prefixlen}", "dev", subnet.bridge)
        _check(run, "-n", router.netns, "link", "set", subnet.bridge, "up")
    _check(run, "route", "replace", plan.nodes_cidr, "via", router.address, "dev", plan.bridge)


def wire_node(plan: NodesPlan, node: NodeSpec, *, run: Run = run_ip) -> None:
    """Step 3 of the module notes for one node."""
    ensure_netns(node.netns, run=run)
    _check(run, "-n", node.netns, "link", "set", "lo", "up")
    _veth_into(run, where=node.bridge_netns, end=node.host_veth, netns=node.netns)
    at = ["-n", node.bridge_netns] if node.bridge_netns else []
    _check(run, *at, "link", "set", node.host_veth, "master", node.bridge, "up")
    _check(run, "-n", node.netns, "addr", "replace", f"{node.node_ip}/{node.prefixlen}", "dev", NODE_IFNAME)
    _check(run, "-n", node.netns, "link", "set", NODE_IFNAME, "up")
    _check(run, "-n", node.netns, "route", "replace", "default", "via", node.gateway or plan.host_ip,
           "dev", NODE_IFNAME)
    if node.via_router:
        _check(run, "-n", node.netns, "route", "replace", plan.nodes_cidr, "via", node.via_router, "dev", NODE_IFNAME)


def wire(plan: NodesPlan, *, ensure_bridge: Callable[[str, str], object], run: Run = run_ip) -> None:
    """Everything in the module notes, for every node of the plan."""
    ensure_bridge(plan.bridge, f"{plan.host_ip}/{plan.prefixlen}")
    if plan.router is not None:
        wire_router(plan, plan.router, run=run)
    for node in plan.nodes:
        wire_node(plan, node, run=run)


def unwire(plan: NodesPlan, *, run: Run = run_ip) -> list[str]:
    """Remove namespaces, host veths and the bridge; returns what could not be removed (never raises
    for one part, so the rest still goes)."""
    errors = []
    for netns in [node.netns for node in plan.nodes] + ([plan.router.netns] if plan.router else []):
        if netns_exists(netns, run=run):
            done = run(["netns", "del", netns])
            if done.returncode != 0:
                errors.append(f"namespace {netns}: {done.stderr.strip()}")
    host_veths = [node.host_veth for node in plan.nodes if not node.bridge_netns]
    for name in host_veths + ([plan.router.host_veth] if plan.router else []) + [plan.bridge]:
        if link_exists(name, run=run):
            done = run(["link", "del", name])
            if done.returncode != 0 and link_exists(name, run=run):
                errors.append(f"link {name}: {done.stderr.strip()}")
    return errors
