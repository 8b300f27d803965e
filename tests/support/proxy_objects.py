"""Service and Endpoints wire dicts for proxy tests, and a Runner that runs commands inside a network
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
              not_ready: Sequence[str] = ()) -> dict:
    return {"metadata": {"namespace": namespace, "name": name},
            "subsets": [{"addresses": [{"ip": ip} for ip in ips],
                         "notReadyAddresses": [{"ip": ip} for ip in not_ready],
                         "ports": [{"name": port_name, "port": port, "protocol": protocol}]}]}


class NetnsRunner:
    """`ip netns exec NS argv`; keeps the stdin of every restore so tests can read what was loaded."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.restores: list[str] = []

    def __call__(self, argv: Sequence[str], *, stdin: str | None = None) -> Result:
        if "restore" in argv[0] and stdin is not None:
            self.restores.append(stdin)
        return run_command(["ip", "netns", "exec", self.namespace, *argv], stdin=stdin)
