"""A node's kubelet together with its cluster DNS server (clusterdns/), for `slimkube agent` and `up`.

The DNS server of a node runs in the agent's process, started once the kubelet has registered the Node (its
EndpointSlice of `kube-dns` is owned by the Node) and stopped before the kubelet. It listens on the node's
InternalIP — the address the kubelet reports, which the kube-proxy DNATs `kube-dns`'s ClusterIP to — never
on a wildcard, so the host's own resolver (systemd-resolved's 127.0.0.53) keeps port 53. A DNS server that
cannot start (the port taken on that address) is reported and the kubelet runs on: pods then have a
nameserver that does not answer, which `kubectl get endpointslices -n kube-system` shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from clusterdns.app import ClusterDNS, DNSConfig
from control.client.kubeconfig import ClientConfig
from control.client.rest import RESTClient
from nodeagent.config import KubeletConfig
from nodeagent.node_status import default_ip

Say = Callable[[str], None]


class Kubelet(Protocol):
    @property
    def node_name(self) -> str: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def is_ready(self) -> bool: ...


def dns_config(config: KubeletConfig) -> DNSConfig:
    return DNSConfig(node_name=config.node_name, address=config.node_ip or default_ip(),
                     domain=config.cluster_domain, service_address=(config.cluster_dns or (None,))[0],
                     resolv_conf=config.resolv_conf, forward_from=(config.cluster_cidr,))


class KubeletWithDNS:
    """Kubelet: the kubelet, then the node's DNS (module notes)."""

    def __init__(self, kubelet: Kubelet, make_dns: Callable[[], ClusterDNS], *, say: Say, tag: str) -> None:
        self.kubelet = kubelet
        self.node_name = kubelet.node_name
        self._make_dns = make_dns
        self._say = say
        self._tag = tag
        self.dns: ClusterDNS | None = None

    def start(self) -> None:
        self.kubelet.start()
        dns = self._make_dns()
        try:
            dns.start()
        except Exception as exc:  # noqa: BLE001 - the kubelet runs on without DNS (module notes)
            self._say(f"[{self._tag}] cluster DNS did not start on {dns.config.address}:{dns.config.port}: {exc}")
            return
        self.dns = dns
        self._say(f"[{self._tag}] cluster DNS on {dns.config.address}:{dns.server.port} ({dns.config.domain})")

    def stop(self) -> None:
        if self.dns is not None:
            self.dns.stop()
            self.dns = None
        self.kubelet.stop()

    def is_ready(self) -> bool:
        return self.kubelet.is_ready()


def with_dns(kubelet: Kubelet, config: KubeletConfig, client_config: ClientConfig, *, say: Say,
             tag: str) -> KubeletWithDNS:
    def make_dns() -> ClusterDNS:
        client = RESTClient(client_config, user_agent=f"slimkube-dns/{config.node_name}")
        return ClusterDNS(dns_config(config), client)

    return KubeletWithDNS(kubelet, make_dns, say=say, tag=tag)
