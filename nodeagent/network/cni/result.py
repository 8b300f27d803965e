"""Plugin results and errors (upstream pkg/types/100/types.go, pkg/types/040, pkg/types/020, and the
spec's "Error" result), pure.

A successful ADD prints a result on stdout: from 0.3.0 on, `interfaces` (name, mac, sandbox — a netns
path for the container's own interfaces, absent for the host's) and `ips` (CIDR `address`, `gateway`, and
`interface`, an index into `interfaces`); 0.1.0/0.2.0 print `ip4`/`ip6` objects instead. The pod's
address is the first IPv4 `ips` entry on the container's interface (`CNI_IFNAME`), else the first IPv4.

The host side: with the bridge plugin the interfaces are [bridge, host veth, container veth], with ptp
[host veth, container veth]; so the host veth is the last host interface before the container's, and the
bridge the host interface before that, if any. They are what keeps a pod's traffic identifiable on the
host (network policy needs them).

A failure exits non-zero with `{"cniVersion", "code", "msg", "details"}` on stdout; plugins that do not
follow that get their stderr (or stdout) text as the message.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.network.cni import version
from nodeagent.network.cni.errors import CNIError, PluginError


@dataclass(frozen=True)
class Interface:
    name: str
    mac: str = ""
    sandbox: str = ""  # the netns path of a container interface; "" for a host interface


@dataclass(frozen=True)
class IPConfig:
    address: str  # CIDR, e.g. "10.244.1.5/24"
    gateway: str = ""
    interface: int | None = None  # index into Result.interfaces


@dataclass(frozen=True)
class Result:
    cni_version: str
    interfaces: tuple[Interface, ...]
    ips: tuple[IPConfig, ...]
    raw: Mapping[str, Any]  # as the plugin printed it: cached, and passed on as the next prevResult

    def container_interface(self, ifname: str) -> int | None:
        return next((i for i, intf in enumerate(self.interfaces) if intf.sandbox and intf.name == ifname), None)

    def pod_ip(self, ifname: str) -> IPConfig | None:
        """The pod's IPv4 address on `ifname` (else the first IPv4 at all)."""
        v4 = [ip for ip in self.ips if ipaddress.ip_interface(ip.address).version == 4]
        index = self.container_interface(ifname)
        return next((ip for ip in v4 if index is not None and ip.interface == index), v4[0] if v4 else None)

    def host_side(self, ifname: str) -> tuple[str, str]:
        """(host veth, bridge) of the container interface `ifname`; "" where the result does not say."""
        index = self.container_interface(ifname)
        if index is None:
            return "", ""
        hosts = [intf.name for intf in self.interfaces[:index] if not intf.sandbox]
        return (hosts[-1] if hosts else "", hosts[-2] if len(hosts) > 1 else "")


def parse_result(data: bytes | Mapping[str, Any], *, plugin: str = "") -> Result:
    """A result from a plugin's stdout (or a cached copy). CNIError if it is not one."""
    try:
        raw = json.loads(data) if isinstance(data, bytes) else dict(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CNIError(f"plugin type={plugin!r}: result is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise CNIError(f"plugin type={plugin!r}: result is not a JSON object")
    cni_version = raw.get("cniVersion", "")
    try:
        legacy = not version.at_least(str(cni_version), version.LIST_RESULT_SINCE)
        if legacy:
            ips = tuple(IPConfig(address=str(raw[key]["ip"]), gateway=str(raw[key].get("gateway") or ""))
                        for key in ("ip4", "ip6") if isinstance(raw.get(key), dict))
            interfaces: tuple[Interface, ...] = ()
        else:
            interfaces = tuple(Interface(name=str(i.get("name", "")), mac=str(i.get("mac") or ""),
                                         sandbox=str(i.get("sandbox") or "")) for i in raw.get("interfaces") or ())
            ips = tuple(IPConfig(address=str(ip["address"]), gateway=str(ip.get("gateway") or ""),
                                 interface=ip.get("interface") if isinstance(ip.get("interface"), int) else None)
                        for ip in raw.get("ips") or ())
        for ip in ips:
            ipaddress.ip_interface(ip.address)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CNIError(f"plugin type={plugin!r}: malformed result: {exc!r}") from None
    return Result(cni_version=str(cni_version), interfaces=interfaces, ips=ips, raw=raw)


def parse_error(plugin: str, command: str, stdout: bytes, stderr: bytes, returncode: int) -> PluginError:
    """The error a failed plugin reported: its error JSON if it printed one, else its text."""
    try:
        document = json.loads(stdout)
    except (ValueError, UnicodeDecodeError):
        document = None
    if isinstance(document, dict) and "msg" in document:
        code = document.get("code")
        return PluginError(plugin, command, code=code if isinstance(code, int) else 0,
                           msg=str(document.get("msg")), details=str(document.get("details") or ""))
    text = (stderr or stdout).decode(errors="replace").strip()
    return PluginError(plugin, command, code=0, msg=text or f"exit status {returncode}")
