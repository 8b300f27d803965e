"""Service and EndpointSlice wire dicts for proxy tests, and a Runner that runs commands inside a network
namespace (so the proxy's iptables and conntrack calls reach only a namespace the test made)."""

from __future__ import annotations

from collections.abc import Sequence

from control.util.iptables import Result, run_command


def service(name: str = "web", *, ip: str = "10.96.0.10", port: int = 80, protocol: str = "TCP",
            port_name: str = "http", namespace: str = "default") -> dict:
    return {"metadata": {"namespace": namespace, "name": name},
            "spec": {"clusterIP": ip, "ports": [{"name": port_name, "port": port, "protocol": protocol}]}}


def endpoints(name: str = "web", ips: Sequence[str] = ("10.244.1.2",), *, port: int = 8080,
              protocol: str = "TCP", port_name: str = "http", namespace: str = "default",
              not_ready: Sequence[str] = (), terminating: Sequence[str] = (), slice_name: str | None = None,
              node_name: str = "") -> dict:
    """One EndpointSlice of Service `name` (named `slice_name`, default the Service's): `ips` ready,
    `not_ready` neither ready nor serving, `terminating` serving while terminating."""
    def endpoint(ip: str, ready: bool, serving: bool, term: bool) -> dict:
        entry: dict = {"addresses": [ip], "conditions": {"ready": ready, "serving": serving, "terminating": term}}
        if node_name:
            entry["nodeName"] = node_name
        return entry

    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"namespace": namespace, "name": slice_name or name,
                         "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "endpoints": [endpoint(ip, True, True, False) for ip in ips]
            + [endpoint(ip, False, False, False) for ip in not_ready]
            + [endpoint(ip, False, True, True) for ip in terminating],
            "ports": [{"name": port_name, "port": port, "protocol": protocol}]}


class NetnsRunner:
    """`ip netns exec NS argv`; keeps the stdin of every restore so tests can read what was loaded."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.restores: list[str] = []

    def __call__(self, argv: Sequence[str], *, stdin: str | None = None) -> Result:
        if "restore" in argv[0] and stdin is not None:
            self.restores.append(stdin)
        return run_command(["ip", "netns", "exec", self.namespace, *argv], stdin=stdin)
