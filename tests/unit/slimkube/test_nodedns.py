"""slimkube/nodedns.py and the agent's DNS flags: the DNS starts after the kubelet registered and stops
before it; a DNS that cannot start leaves the kubelet running; clusterDNS defaults to the service CIDR's
tenth address."""

from __future__ import annotations

from dataclasses import dataclass, field

from nodeagent.config import KubeletConfig
from slimkube.nodedns import KubeletWithDNS, dns_config
from slimkube.upplan import cluster_dns_flag, with_default_cluster_dns


@dataclass
class Fake:
    log: list[str]
    name: str
    fail: bool = False
    config: object = field(default=None)

    node_name = "n1"

    def start(self) -> None:
        self.log.append(f"start {self.name}")
        if self.fail:
            raise OSError("Address already in use")

    def stop(self) -> None:
        self.log.append(f"stop {self.name}")

    def is_ready(self) -> bool:
        return True


class FakeDNSConfig:
    address, port, domain = "10.250.0.2", 53, "cluster.local"


def test_order_and_a_dns_that_cannot_start():
    log: list[str] = []
    said: list[str] = []
    dns = Fake(log, "dns", config=FakeDNSConfig())
    dns.server = type("S", (), {"port": 53})()  # type: ignore[attr-defined]
    node = KubeletWithDNS(Fake(log, "kubelet"), lambda: dns, say=said.append, tag="agent")  # type: ignore[arg-type]
    node.start()
    node.stop()
    assert log == ["start kubelet", "start dns", "stop dns", "stop kubelet"]
    assert said == ["[agent] cluster DNS on 10.250.0.2:53 (cluster.local)"]
    log.clear()
    broken = KubeletWithDNS(Fake(log, "kubelet"), lambda: Fake(log, "dns", fail=True, config=FakeDNSConfig()),
                            say=said.append, tag="agent")  # type: ignore[arg-type]
    broken.start()
    assert broken.is_ready() and said[-1].startswith("[agent] cluster DNS did not start on 10.250.0.2:53: ")
    broken.stop()
    assert log == ["start kubelet", "start dns", "stop kubelet"]


def test_cluster_dns_defaults_and_flags():
    assert with_default_cluster_dns(KubeletConfig(), "10.100.0.0/16").cluster_dns == ("10.100.0.10",)
    assert with_default_cluster_dns(KubeletConfig(cluster_dns=("1.2.3.4",)), "10.96.0.0/12").cluster_dns == (
        "1.2.3.4",)
    assert cluster_dns_flag("10.0.0.10, 10.0.0.11") == ("10.0.0.10", "10.0.0.11")
    assert cluster_dns_flag(None) is None
    config = dns_config(KubeletConfig(node_name="n1", node_ip="10.250.0.2", cluster_dns=("10.96.0.10",)))
    assert (config.address, config.service_address, config.forward_from) == ("10.250.0.2", "10.96.0.10",
                                                                             ("10.244.0.0/16",))
