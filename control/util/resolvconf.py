"""The node's resolver configuration (resolv.conf), read the way upstream's kubelet reads it.

Shared by the kubelet (a pod's /etc/resolv.conf, nodeagent/runtime/pod_files.py) and the cluster DNS
(where names outside the cluster domain are forwarded, clusterdns/forward.py).

Upstream: pkg/kubelet/network/dns/dns.go `parseResolvConf`: `nameserver` lines add a server, the last
`search` line wins (each domain without its trailing dot, a lone "." dropped), `options` lines add up.
Upstream does not read `domain` lines; neither do we.

Which file: `/etc/resolv.conf`, unless every nameserver in it is a loopback stub (systemd-resolved's
127.0.0.53, a local dnsmasq) and `/run/systemd/resolve/resolv.conf` exists — there systemd-resolved
lists the real upstream servers. kubeadm makes the same choice for the kubelet's `resolvConf` on such
hosts. A loopback stub is useless to a pod (its 127.0.0.53 is not the node's) and would loop back into
the cluster DNS that forwards to it.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass

HOST_RESOLV_CONF = "/etc/resolv.conf"
SYSTEMD_RESOLVED_CONF = "/run/systemd/resolve/resolv.conf"


@dataclass(frozen=True)
class ResolvConf:
    nameservers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[str, ...] = ()

    def without_loopback(self) -> ResolvConf:
        return ResolvConf(tuple(ns for ns in self.nameservers if not is_loopback(ns)), self.searches, self.options)


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False


def parse(text: str) -> ResolvConf:
    """resolv.conf text → its nameservers, searches and options (see the module notes)."""
    nameservers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith(("#", ";")):
            continue
        if fields[0] == "nameserver" and len(fields) > 1:
            nameservers.append(fields[1])
        elif fields[0] == "search":
            searches = [s.rstrip(".") for s in fields[1:] if s != "."]
        elif fields[0] == "options":
            options += fields[1:]
    return ResolvConf(tuple(nameservers), tuple(searches), tuple(options))


def node_resolv_conf_path(primary: str = HOST_RESOLV_CONF, resolved: str = SYSTEMD_RESOLVED_CONF) -> str:
    """`primary`, or systemd-resolved's list of real servers when `primary` names only loopback stubs."""
    try:
        with open(primary, encoding="utf-8") as handle:
            config = parse(handle.read())
    except OSError:
        return primary
    if config.nameservers and not config.without_loopback().nameservers and os.path.exists(resolved):
        return resolved
    return primary


def read(path: str) -> ResolvConf:
    """The parsed file; a missing or unreadable file is an empty config (upstream: no host DNS)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return parse(handle.read())
    except OSError:
        return ResolvConf()
