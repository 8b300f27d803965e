"""`slimkube down`: remove what a node's kubelet made on this host (the model is k3s's
k3s-killall.sh, which kills the pods' containers and removes the CNI interfaces and its iptables rules
but leaves the data directory and datastore alone).

Removed, in this order:
1. every Docker container labelled `slimkube.io/node=<node>` (nodeagent/runtime/labels.py), force-removed
   with anonymous volumes, a few at a time; the host end of each sandbox's veth goes with it (and is
   deleted explicitly when it outlived its netns); then a DEL of every attachment CNI mode cached
   (nodeagent/network/cni/), which releases its address and hostPorts, and the portmap plugin's shared
   chains once no pod uses them;
2. the node's pod bridge, the routes to other nodes' pods and the VXLAN device this node's backend made
   (nodeagent/network/backends/netlink.py `remove_all`: only routes of its protocol number), then our
   iptables jumps and chains (nodeagent/network/rules.py `remove`:
   only those, never another chain), and the hostPort jumps and chains (KUBE-HOSTPORTS, KUBE-HP-*;
   before the proxy's cleanup, since they jump to its KUBE-MARK-MASQ) with their state file;
3. the IPAM table and its lock (nodeagent/network/ipam.py), and the pods' directories (volumes,
   etc-hosts, termination logs) under `<data dir>/kubelet/pods`.

Kept: the API server's store and tokens, so the Pod objects remain and a later `up` recreates them
(fresh containers; only running containers are adopted). Containers of other nodes sharing this
dockerd, and anything a user ran by hand, carry no or another `slimkube.io/node` label and are not
touched.

Docker and the host network are reached through small Protocols so the order and the report are
unit-tested with fakes; tests/e2e/test_up_down.py runs it for real.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from nodeagent.config import KubeletConfig, default_pod_cidr
from nodeagent.network import hostport_manager, rules
from nodeagent.network.ipam import state_path
from nodeagent.network.podnet import veth_name
from nodeagent.runtime import labels

REMOVE_WORKERS = 8


class DockerAPI(Protocol):
    """The slice of docker.APIClient used here."""

    def containers(self, *, all: bool, filters: dict[str, Any]) -> list[dict[str, Any]]: ...

    def remove_container(self, container: str, *, v: bool, force: bool) -> None: ...


class HostNetwork(Protocol):
    def delete_link(self, name: str) -> bool: ...

    def delete_bridge(self, name: str) -> bool: ...

    def remove_pod_routes(self, vxlan_device: str) -> None: ...

    def remove_cni_attachments(self, config: KubeletConfig) -> list[str]: ...


@dataclass(frozen=True)
class TeardownReport:
    containers: int
    veths: int
    bridge: bool
    chains: tuple[str, ...]
    ipam_state: bool
    pod_dirs: int
    errors: tuple[str, ...] = field(default=())


class RealHostNetwork:
    def delete_link(self, name: str) -> bool:
        from nodeagent.network.podnet import teardown_pod_network

        return teardown_pod_network(name)

    def delete_bridge(self, name: str) -> bool:
        from nodeagent.network.bridge import delete_bridge

        return delete_bridge(name)

    def remove_pod_routes(self, vxlan_device: str) -> None:
        from nodeagent.network.backends.netlink import NetlinkRoutes

        NetlinkRoutes().remove_all(vxlan_device)

    def remove_cni_attachments(self, config: KubeletConfig) -> list[str]:
        """DEL every attachment CNI mode cached (the sandboxes are gone: no netns), then portmap's shared
        chains once unused and the cache and host-local store of the default list; the errors met."""
        from control.util.iptables import detect
        from nodeagent.network.cni.podnet import CNIPodNetwork
        from nodeagent.network.cni.portmap import remove_shared_chains

        if not os.path.isdir(config.cni_dir):
            return []
        cni = CNIPodNetwork(conf_dir=config.cni_conf_dir, bin_dirs=config.cni_bin_dir.split(","),
                            cache_dir=config.cni_dir, netns_of=lambda sandbox_id: "")
        errors = cni.detach_all()
        remove_shared_chains(detect())
        if not errors:
            shutil.rmtree(config.cni_dir, ignore_errors=True)
        return errors


def node_containers(docker_api: DockerAPI, node_name: str) -> list[dict[str, Any]]:
    return docker_api.containers(all=True, filters={"label": f"{labels.NODE}={node_name}"})


def _is_sandbox(container: dict[str, Any]) -> bool:
    return (container.get("Labels") or {}).get(labels.CONTAINER_TYPE) == labels.Kind.SANDBOX.value


def _remove_containers(docker_api: DockerAPI, containers: Sequence[dict[str, Any]], errors: list[str]) -> int:
    def remove(container: dict[str, Any]) -> bool:
        try:
            docker_api.remove_container(container["Id"], v=True, force=True)
            return True
        except Exception as exc:  # noqa: BLE001 - one container's failure must not stop the rest
            if "No such container" in str(exc):
                return False
            errors.append(f"container {container['Id'][:12]}: {exc}")
            return False

    # app containers first, so none outlives the sandbox whose namespaces it shares
    apps = [c for c in containers if not _is_sandbox(c)]
    sandboxes = [c for c in containers if _is_sandbox(c)]
    with ThreadPoolExecutor(max_workers=REMOVE_WORKERS) as pool:
        removed = sum(pool.map(remove, apps))
        removed += sum(pool.map(remove, sandboxes))
    return removed


def _remove_pod_dirs(pods_dir: str, errors: list[str]) -> int:
    from nodeagent.volumes.pod_volumes import teardown as teardown_pod_dir

    try:
        uids = sorted(os.listdir(pods_dir))
    except FileNotFoundError:
        return 0
    removed = 0
    for uid in uids:
        try:
            teardown_pod_dir(pods_dir, uid)
            removed += 1
        except (OSError, ValueError) as exc:
            errors.append(f"pod directory {uid}: {exc}")
    return removed


def _remove_ipam_state(config: KubeletConfig) -> bool:
    path = state_path(config.state_dir)
    found = False
    for candidate in (path, path.with_name(path.name + ".lock")):
        try:
            os.unlink(candidate)
            found = True
        except FileNotFoundError:
            pass
    return found


def teardown(config: KubeletConfig, *, docker_api: DockerAPI, iptables: hostport_manager.IptablesClient,
             network: HostNetwork, log: Callable[[str], None] = lambda line: None) -> TeardownReport:
    """Remove the node's containers, pod network, rules and IPAM state (see the module notes)."""
    errors: list[str] = []
    containers = node_containers(docker_api, config.node_name)
    sandbox_ids = [c["Id"] for c in containers if _is_sandbox(c)]
    log(f"removing {len(containers)} containers of node {config.node_name}")
    removed = _remove_containers(docker_api, containers, errors)
    try:
        errors += network.remove_cni_attachments(config)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"CNI attachments: {exc}")
    veths = 0
    for sandbox_id in sandbox_ids:
        try:
            veths += bool(network.delete_link(veth_name(sandbox_id, prefix=config.veth_prefix)))
        except Exception as exc:  # noqa: BLE001 - report and go on; the bridge and rules still go
            errors.append(f"veth of sandbox {sandbox_id[:12]}: {exc}")
    net = config.network(config.pod_cidr or default_pod_cidr(config.cluster_cidr))
    log(f"removing bridge {net.bridge} and chains {net.forward_chain}, {net.masq_chain}")
    bridge = False
    try:
        bridge = network.delete_bridge(net.bridge)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"bridge {net.bridge}: {exc}")
    if config.pod_network != "none":
        log(f"removing the routes to other nodes' pods and device {config.vxlan_device}")
        try:
            network.remove_pod_routes(config.vxlan_device)
        except Exception as exc:  # noqa: BLE001
            errors.append(f"pod routes: {exc}")
    chains: tuple[str, ...] = ()
    try:
        rules.remove(iptables, net.rules)
        chains = (net.forward_chain, net.masq_chain)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"iptables: {exc}")
    try:
        hostport_manager.remove_rules(iptables)
        hostport_manager.state_path(config.state_dir).unlink(missing_ok=True)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"hostport rules: {exc}")
    ipam_state = _remove_ipam_state(config)
    pod_dirs = _remove_pod_dirs(config.pods_dir, errors)
    if os.path.isdir(config.pods_dir) and not os.listdir(config.pods_dir):
        shutil.rmtree(config.pods_dir, ignore_errors=True)
    return TeardownReport(containers=removed, veths=veths, bridge=bridge, chains=chains, ipam_state=ipam_state,
                          pod_dirs=pod_dirs, errors=tuple(errors))
