"""The node's pod bridge (`cbr0` by default) over netlink with pyroute2.

Upstream's kubenet has the CNI bridge plugin create `cbr0` with the node's first pod address as gateway
(pkg/kubelet/dockershim/network/kubenet/kubenet_linux.go). We do the same directly: create the bridge if
missing, give it `gateway/prefix`, bring it up. Two more host settings belong to it:
- promiscuous mode off: kubenet's "promiscuous-bridge" hairpin mode turns it on; we use per-port hairpin
  mode instead (set on each pod's veth), so a bridge left promiscuous by an older setup is reset;
- `net.ipv4.conf.<bridge>.route_localnet=1`, so NodePorts on 127.0.0.1 DNAT'd to a pod are routable,
  and `net.ipv4.ip_forward=1`, without which no pod reaches beyond the bridge.

Every step is idempotent and tolerates a concurrent creator (EEXIST is success), so the kubelet calls
`ensure_bridge` at every start and before every sandbox without reading state first.
"""

from __future__ import annotations

import errno
import ipaddress
from pathlib import Path

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.rtnl.ifinfmsg import IFF_PROMISC

SYSCTL_ROOT = Path("/proc/sys")


def write_sysctl(name: str, value: str, *, root: Path = SYSCTL_ROOT) -> None:
    """Set `net.ipv4.ip_forward`-style keys (dots → path) unless already set, so reads stay cheap."""
    path = root.joinpath(*name.split("."))
    if path.read_text().strip() != value:
        path.write_text(value)


def ensure_bridge(name: str, gateway_cidr: str, *, mtu: int | None = None) -> int:
    """Create (if missing), address and bring up bridge `name`; returns its ifindex.

    `gateway_cidr` is the bridge's own address with the pod prefix, e.g. "10.244.3.1/24".
    """
    interface = ipaddress.IPv4Interface(gateway_cidr)
    with IPRoute() as ipr:
        found = ipr.link_lookup(ifname=name)
        if not found:
            try:
                ipr.link("add", ifname=name, kind="bridge")
            except NetlinkError as exc:
                if exc.code != errno.EEXIST:
                    raise
            found = ipr.link_lookup(ifname=name)
        index: int
        (index,) = found
        (link,) = ipr.get_links(index)
        if link.get_nested("IFLA_LINKINFO", "IFLA_INFO_KIND") != "bridge":
            raise RuntimeError(f"{name} exists and is not a bridge")
        have = {(a.get("IFA_ADDRESS"), a["prefixlen"]) for a in ipr.get_addr(index=index, family=2)}
        if (str(interface.ip), interface.network.prefixlen) not in have:
            try:
                ipr.addr("add", index=index, address=str(interface.ip), prefixlen=interface.network.prefixlen)
            except NetlinkError as exc:
                if exc.code != errno.EEXIST:
                    raise
        if link["flags"] & IFF_PROMISC:
            ipr.link("set", index=index, flags=0, change=IFF_PROMISC)
        settings = {"state": "up"} if mtu is None else {"state": "up", "mtu": mtu}
        ipr.link("set", index=index, **settings)
    write_sysctl(f"net.ipv4.conf.{name}.route_localnet", "1")
    write_sysctl("net.ipv4.ip_forward", "1")
    return index


def delete_link(name: str) -> bool:
    """Delete the link called `name`; False if it was not there or vanished meanwhile (idempotent).
    Deleting one end of a veth pair deletes both."""
    with IPRoute() as ipr:
        found = ipr.link_lookup(ifname=name)
        if not found:
            return False
        try:
            ipr.link("del", index=found[0])
        except NetlinkError as exc:
            if exc.code != errno.ENODEV:  # deleted meanwhile, e.g. a veth whose namespace died
                raise
            return False
    return True


def delete_bridge(name: str) -> bool:
    """Remove the bridge (and with it its addresses and connected route); False if it was not there."""
    return delete_link(name)
