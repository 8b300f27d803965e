"""`slimkube down`'s teardown (nodeagent/teardown.py) with fake Docker, host network and iptables."""

from __future__ import annotations

import dataclasses
import json
import os

from nodeagent.config import KubeletConfig, default_pod_cidr
from nodeagent.network import rules
from nodeagent.network.ipam import state_path
from nodeagent.network.podnet import veth_name
from nodeagent.runtime import labels
from nodeagent.teardown import teardown
from tests.support.fake_iptables import FakeIptables


class FakeDocker:
    def __init__(self, containers: list[dict]) -> None:
        self.containers_ = containers
        self.removed: list[str] = []
        self.fail: set[str] = set()

    def containers(self, *, all: bool, filters: dict) -> list[dict]:
        key, _, value = filters["label"].partition("=")
        return [c for c in self.containers_ if c["Labels"].get(key) == value]

    def remove_container(self, container: str, *, v: bool, force: bool) -> None:
        assert v and force
        if container in self.fail:
            raise RuntimeError("device busy")
        self.removed.append(container)


class FakeNetwork:
    def __init__(self, links: set[str]) -> None:
        self.links = links
        self.calls: list[str] = []

    def delete_link(self, name: str) -> bool:
        self.calls.append(f"link {name}")
        found = name in self.links
        self.links.discard(name)
        return found

    def delete_bridge(self, name: str) -> bool:
        self.calls.append(f"bridge {name}")
        return True

    def remove_pod_routes(self, vxlan_device: str) -> None:
        self.calls.append(f"pod routes {vxlan_device}")

    def remove_cni_attachments(self, config) -> list[str]:
        self.calls.append("cni attachments")
        return []


def container(cid: str, node: str, kind: labels.Kind) -> dict:
    return {"Id": cid, "Labels": {labels.NODE: node, labels.CONTAINER_TYPE: kind.value}}


def config(tmp_path) -> KubeletConfig:
    return KubeletConfig(node_name="n1", data_dir=str(tmp_path), pod_bridge="sktestbr", veth_prefix="sktv",
                         pod_forward_chain="KUBE-SKTEST-FWD", pod_masquerade_chain="KUBE-SKTEST-MASQ")


def test_removes_only_this_nodes_containers_apps_before_sandboxes_then_network_and_state(tmp_path):
    cfg = config(tmp_path)
    docker = FakeDocker([container("sb1", "n1", labels.Kind.SANDBOX), container("app1", "n1", labels.Kind.CONTAINER),
                         container("other", "n2", labels.Kind.CONTAINER)])
    network, iptables = FakeNetwork({veth_name("sb1", prefix="sktv")}), FakeIptables()
    rules.apply(iptables, cfg.network(cfg.pod_cidr or default_pod_cidr(cfg.cluster_cidr)).rules)  # a node's rules
    assert len(iptables.jumps) == 2
    ipam = state_path(cfg.state_dir)
    os.makedirs(ipam.parent)
    ipam.write_text(json.dumps({}))
    os.makedirs(os.path.join(cfg.pods_dir, "uid-1", "volumes"))
    lines: list[str] = []

    report = teardown(cfg, docker_api=docker, iptables=iptables, network=network, log=lines.append)

    assert docker.removed == ["app1", "sb1"]
    assert network.calls == ["cni attachments", f"link {veth_name('sb1', prefix='sktv')}", "bridge sktestbr",
                             "pod routes flannel.1"]
    assert not iptables.jumps  # both jumps deleted before the chains
    assert "-X KUBE-SKTEST-FWD" in iptables.restores[-1] and "-X KUBE-SKTEST-MASQ" in iptables.restores[-1]
    assert not ipam.exists() and not os.path.exists(cfg.pods_dir)
    assert dataclasses.astuple(report)[:6] == (2, 1, True, ("KUBE-SKTEST-FWD", "KUBE-SKTEST-MASQ"), True, 1)
    assert report.errors == () and any("2 containers of node n1" in line for line in lines)


def test_a_failure_is_reported_and_the_rest_still_goes(tmp_path):
    docker = FakeDocker([container("a", "n1", labels.Kind.CONTAINER), container("b", "n1", labels.Kind.CONTAINER)])
    docker.fail.add("a")
    iptables = FakeIptables()
    report = teardown(config(tmp_path), docker_api=docker, iptables=iptables, network=FakeNetwork(set()))
    assert docker.removed == ["b"] and report.containers == 1
    assert len(report.errors) == 1 and "device busy" in report.errors[0]
    assert report.bridge and not iptables.jumps


def test_nothing_to_remove_is_fine(tmp_path):
    report = teardown(config(tmp_path), docker_api=FakeDocker([]), iptables=FakeIptables(),
                      network=FakeNetwork(set()))
    assert (report.containers, report.veths, report.ipam_state, report.pod_dirs, report.errors) == (0, 0, False, 0, ())


def test_pod_network_none_leaves_routes_alone(tmp_path):
    cfg = dataclasses.replace(config(tmp_path), pod_network="none")
    network = FakeNetwork(set())
    teardown(cfg, docker_api=FakeDocker([]), iptables=FakeIptables(), network=network)
    assert network.calls == ["cni attachments", "bridge sktestbr"]
