"""Wire one pod sandbox's network namespace to the node bridge with a veth pair.

What the CNI bridge plugin does for kubenet (containernetworking/plugins plugins/main/bridge), over
netlink with pyroute2, for a pause container started with
`network_mode=none`:

1. a veth pair whose host end is named from the sandbox id and whose peer is created directly inside the
   sandbox's namespace (`/proc/<pid>/ns/net` or a bind-mounted netns path) as `eth0` — the same result as
   creating it on the host and moving it, without a temporary name on the host that could collide;
2. the host end enslaved to the bridge, hairpin mode on (a pod reaching itself through a service comes
   back through its own port), up;
3. inside the namespace: `lo` up, the pod address on eth0, eth0 up, default route via the bridge's gateway.

Any failure after step 1 deletes the pair again (deleting one end deletes both), so a failed setup
leaves nothing behind and can simply be retried. Teardown is deleting the host end, and succeeds when it
is already gone (the kernel destroys the pair when the namespace dies with its last process).

Host end names are `<prefix><hex of sha256(sandbox id)>`, 15 characters (IFNAMSIZ - 1), like Calico's
`cali` + hash names: deterministic, so a restarted kubelet finds the veth of a sandbox it adopts.

`PodNetwork` is the Protocol the pod-sync code is written against; `NetlinkPodNetwork` is the real one.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Protocol

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from nodeagent.network import bridge
from nodeagent.network.nsenter import call_in_netns

IFNAMSIZ = 16
POD_IFNAME = "eth0"
DEFAULT_VETH_PREFIX = "veth"
MIN_HASH_CHARS = 6  # 16^6 = 16.7 M names: collisions between two sandboxes of one node are negligible


class PodNetworkError(RuntimeError):
    """The pod's network could not be set up; nothing was left half-made."""


@dataclass(frozen=True)
class PodInterface:
    """What a wired sandbox got: its address, where it is plugged in, and the MAC of its eth0."""

    host_veth: str
    ip: str
    prefix_len: int
    gateway: str
    bridge: str
    mac: str
    ifname: str = POD_IFNAME


def veth_name(sandbox_id: str, *, prefix: str = DEFAULT_VETH_PREFIX) -> str:
    """The host-side veth name of a sandbox: `prefix` + hex digest, 15 characters in all."""
    room = IFNAMSIZ - 1 - len(prefix)
    if not prefix or room < MIN_HASH_CHARS or not prefix.isascii() or not prefix.isalnum():
        raise ValueError(f"veth prefix {prefix!r}: 1 to {IFNAMSIZ - 1 - MIN_HASH_CHARS} letters or digits")
    return prefix + hashlib.sha256(sandbox_id.encode()).hexdigest()[:room]


def netns_path(pid_or_path: int | str) -> str:
    """A namespace file: `/proc/<pid>/ns/net` for a process id, else the path as given."""
    return f"/proc/{pid_or_path}/ns/net" if isinstance(pid_or_path, int) else pid_or_path


class PodNetwork(Protocol):
    """The host networking the kubelet drives; fakes implement it in unit tests."""

    def ensure_bridge(self, name: str, gateway_cidr: str) -> None: ...

    def setup_pod_network(self, pid_or_netns_path: int | str, *, ip: str, prefix_len: int, gateway: str,
                          bridge: str, host_veth_name: str, mtu: int = 1500) -> PodInterface: ...

    def teardown_pod_network(self, host_veth_name: str) -> bool: ...


def setup_pod_network(pid_or_netns_path: int | str, *, ip: str, prefix_len: int, gateway: str, bridge: str,
                      host_veth_name: str, mtu: int = 1500) -> PodInterface:
    """Wire the namespace to `bridge` (which must exist) as described in the module docstring."""
    path = netns_path(pid_or_netns_path)
    if not os.path.exists(path):
        raise PodNetworkError(f"network namespace {path} does not exist (sandbox gone?)")
    with IPRoute() as ipr:
        masters = ipr.link_lookup(ifname=bridge)
        if not masters:
            raise PodNetworkError(f"bridge {bridge} does not exist")
        teardown_pod_network(host_veth_name)  # a pair left by an interrupted earlier attempt
        try:
            ipr.link("add", ifname=host_veth_name, kind="veth", mtu=mtu,
                     peer={"ifname": POD_IFNAME, "net_ns_fd": path, "mtu": mtu})
        except NetlinkError as exc:
            raise PodNetworkError(f"creating veth {host_veth_name} into {path}: {exc}") from exc
        try:
            (host_index,) = ipr.link_lookup(ifname=host_veth_name)
            ipr.link("set", index=host_index, master=masters[0])
            ipr.brport("set", index=host_index, mode=1)  # IFLA_BRPORT_MODE: hairpin
            ipr.link("set", index=host_index, state="up")
            mac = _configure_inside(path, ip=ip, prefix_len=prefix_len, gateway=gateway)
        except Exception as exc:
            teardown_pod_network(host_veth_name)
            raise PodNetworkError(f"wiring {host_veth_name} ({ip}/{prefix_len}) into {path}: {exc}") from exc
    return PodInterface(host_veth=host_veth_name, ip=ip, prefix_len=prefix_len, gateway=gateway, bridge=bridge,
                        mac=mac)


def _configure_inside(path: str, *, ip: str, prefix_len: int, gateway: str) -> str:
    """lo up; eth0 address, up; default route via the gateway. Returns eth0's MAC. Runs on a thread inside
    the namespace (nodeagent/network/nsenter.py: pyroute2's `netns=` forks a process per socket)."""

    def configure() -> str:
        with IPRoute() as inside:
            (lo,) = inside.link_lookup(ifname="lo")
            inside.link("set", index=lo, state="up")
            (eth0,) = inside.link_lookup(ifname=POD_IFNAME)
            inside.addr("add", index=eth0, address=ip, prefixlen=prefix_len)
            inside.link("set", index=eth0, state="up")
            inside.route("add", dst="0.0.0.0/0", gateway=gateway, oif=eth0)
            (link,) = inside.get_links(eth0)
            mac: str = link.get_attr("IFLA_ADDRESS")
            return mac

    return call_in_netns(path, configure)


def teardown_pod_network(host_veth_name: str) -> bool:
    """Delete the pod's veth pair; False if it was already gone (idempotent). Raises PodNetworkError."""
    try:
        return bridge.delete_link(host_veth_name)
    except NetlinkError as exc:
        raise PodNetworkError(f"deleting veth {host_veth_name}: {exc}") from exc


class NetlinkPodNetwork:
    """`PodNetwork` on the real kernel."""

    def ensure_bridge(self, name: str, gateway_cidr: str) -> None:
        bridge.ensure_bridge(name, gateway_cidr)

    def setup_pod_network(self, pid_or_netns_path: int | str, *, ip: str, prefix_len: int, gateway: str,
                          bridge: str, host_veth_name: str, mtu: int = 1500) -> PodInterface:
        return setup_pod_network(pid_or_netns_path, ip=ip, prefix_len=prefix_len, gateway=gateway, bridge=bridge,
                                 host_veth_name=host_veth_name, mtu=mtu)

    def teardown_pod_network(self, host_veth_name: str) -> bool:
        return teardown_pod_network(host_veth_name)
