"""A sandbox's network through CNI: what the pod-sync code calls in `--network-plugin cni` mode (upstream
pkg/kubelet/dockershim/network/cni/cni.go SetUpPod / TearDownPod / buildCNIRuntimeConf, on libcni).

- attach (sandbox start): the first configuration list of the directory, read afresh (an operator may
  replace it while the kubelet runs, as the dockershim's periodic syncNetworkConfig allowed), ADD with
  the pod's identity in `CNI_ARGS` (`IgnoreUnknown=1;K8S_POD_NAMESPACE;K8S_POD_NAME;
  K8S_POD_INFRA_CONTAINER_ID;K8S_POD_UID`) and its hostPorts as the `portMappings` capability; the pod IP is
  the result's. A failed ADD is DELeted at once (the next sync retries it) and raises the plugin's error.
- detach (teardown): DEL of every cached attachment of the sandbox, from the cached list and arguments, so
  it works after a restart, after the pod is gone and after the directory changed. The namespace path is
  looked up again (`netns_of`): a stopped sandbox's pid may belong to another process by now, so a
  sandbox that is not running gets an empty `CNI_NETNS`, which plugins accept for DEL.
- start (agent start): attachments of sandboxes that no longer run are DELeted; those of running ones
  are CHECKed where the list's version allows (a failure is logged) and their addresses returned.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from control.api.typed.core import Pod
from nodeagent.network.cni import conf, version
from nodeagent.network.cni.api import CNIConfig, RuntimeConf
from nodeagent.network.cni.cache import CachedAttachment, ResultCache
from nodeagent.network.cni.errors import CNIError, ConfigError
from nodeagent.network.cni.invoke import Exec, RawExec
from nodeagent.network.cni.result import parse_result
from nodeagent.network.podnet import POD_IFNAME, PodInterface, netns_path

log = logging.getLogger(__name__)


def pod_args(pod: Mapping[str, Any], sandbox_id: str) -> tuple[tuple[str, str], ...]:
    """CNI_ARGS as the kubelet sets them."""
    meta = Pod(pod).metadata
    return (("IgnoreUnknown", "1"), ("K8S_POD_NAMESPACE", meta.namespace or "default"),
            ("K8S_POD_NAME", meta.name), ("K8S_POD_INFRA_CONTAINER_ID", sandbox_id), ("K8S_POD_UID", meta.uid))


def port_mappings(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The `portMappings` capability: every container port with a hostPort (protocol lower case)."""
    mappings = []
    for container in (pod.get("spec") or {}).get("containers") or ():
        for port in container.get("ports") or ():
            if int(port.get("hostPort") or 0) > 0:
                mapping = {"hostPort": int(port["hostPort"]), "containerPort": int(port["containerPort"]),
                           "protocol": str(port.get("protocol") or "TCP").lower()}
                if port.get("hostIP"):
                    mapping["hostIP"] = port["hostIP"]
                mappings.append(mapping)
    return mappings


def capability_args(pod: Mapping[str, Any]) -> dict[str, Any]:
    mappings = port_mappings(pod)
    return {"portMappings": mappings} if mappings else {}


def load_network(conf_dir: str) -> conf.NetworkConfigList:
    """The first usable list of `conf_dir`; files that do not parse are skipped with a warning."""
    try:
        names = conf.candidates(os.listdir(conf_dir))
    except OSError as exc:
        raise ConfigError(f"no networks found in {conf_dir}: {exc}") from None
    for name in names:
        try:
            with open(os.path.join(conf_dir, name), "rb") as file:
                return conf.parse(file.read(), name)
        except (OSError, ConfigError) as exc:
            log.warning("skipping CNI configuration %s: %s", name, exc)
    raise ConfigError(f"no networks found in {conf_dir}")


def cached_network(attachment: CachedAttachment) -> conf.NetworkConfigList:
    """The list an attachment was added with, from its cached bytes (a list, or a single plugin's config)."""
    try:
        listed = "plugins" in json.loads(attachment.config)
    except (ValueError, TypeError):
        listed = False  # conf.parse says what is wrong with it
    return conf.parse(attachment.config, "cached.conflist" if listed else "cached.conf")


class CNIPodNetwork:
    def __init__(self, *, conf_dir: str, bin_dirs: Sequence[str], cache_dir: str,
                 netns_of: Callable[[str], str], exec: Exec | None = None) -> None:
        self.conf_dir = conf_dir
        self.cache = ResultCache(cache_dir)
        self._cni = CNIConfig(bin_dirs, exec or RawExec(), self.cache)
        self._netns_of = netns_of

    def attach(self, sandbox_id: str, pod: Mapping[str, Any], pid_or_netns_path: int | str) -> PodInterface:
        network = load_network(self.conf_dir)
        rt = RuntimeConf(container_id=sandbox_id, netns=netns_path(pid_or_netns_path), ifname=POD_IFNAME,
                         args=pod_args(pod, sandbox_id), capability_args=capability_args(pod))
        try:
            result = self._cni.add_network_list(network, rt)
            ip = result.pod_ip(POD_IFNAME)
            if ip is None:
                raise CNIError(f"network {network.name}: the result has no IPv4 address")
        except BaseException:
            self._delete(network, rt)
            raise
        host_veth, bridge = result.host_side(POD_IFNAME)
        index = result.container_interface(POD_IFNAME)
        address = ipaddress.IPv4Interface(ip.address)
        return PodInterface(host_veth=host_veth, ip=str(address.ip), prefix_len=address.network.prefixlen,
                            gateway=ip.gateway, bridge=bridge,
                            mac=result.interfaces[index].mac if index is not None else "")

    def _delete(self, network: conf.NetworkConfigList, rt: RuntimeConf) -> None:
        """DEL after a failed ADD; its own failure is logged (the ADD's error is the one that matters)."""
        try:
            self._cni.del_network_list(network, rt)
        except CNIError as exc:
            log.warning("DEL after failed ADD of sandbox %s: %s", rt.container_id[:12], exc)

    def detach(self, sandbox_id: str) -> str | None:
        """DEL every attachment of the sandbox; its pod IP (None if it had none). Raises CNIError."""
        released = None
        for attachment in self.cache.attachments(sandbox_id):
            rt = RuntimeConf(container_id=sandbox_id, netns=self._netns_of(sandbox_id), ifname=attachment.ifname,
                             args=attachment.cni_args, capability_args=attachment.capability_args)
            self._cni.del_network_list(cached_network(attachment), rt)
            released = released or _ip_of(attachment)
        return released

    def start(self, live_sandbox_ids: Iterable[str]) -> dict[str, str]:
        """DEL what belongs to sandboxes gone meanwhile, CHECK the rest; sandbox id → pod IP of the live ones."""
        live = set(live_sandbox_ids)
        ips: dict[str, str] = {}
        for attachment in self.cache.attachments():
            sandbox_id = attachment.container_id
            try:
                if sandbox_id not in live:
                    log.info("CNI: releasing the network of sandbox %s, which is gone", sandbox_id[:12])
                    self.detach(sandbox_id)
                    continue
                if (ip := _ip_of(attachment)) is not None:
                    ips[sandbox_id] = ip
                network = cached_network(attachment)
                if conf_version_checks(network) and attachment.result is not None:
                    self._cni.check_network_list(network, RuntimeConf(
                        container_id=sandbox_id, netns=self._netns_of(sandbox_id), ifname=attachment.ifname,
                        args=attachment.cni_args, capability_args=attachment.capability_args))
            except CNIError as exc:
                log.warning("CNI: sandbox %s: %s", sandbox_id[:12], exc)
        return ips

    def detach_all(self) -> list[str]:
        """`slimkube down`: DEL every cached attachment; the errors met (one per sandbox)."""
        errors = []
        for sandbox_id in sorted({a.container_id for a in self.cache.attachments()}):
            try:
                self.detach(sandbox_id)
            except CNIError as exc:
                errors.append(f"sandbox {sandbox_id[:12]}: {exc}")
        return errors


def conf_version_checks(network: conf.NetworkConfigList) -> bool:
    """Whether a list's attachments can be CHECKed (spec 0.4.0 and later, no `disableCheck`)."""
    return version.at_least(network.cni_version, version.CHECK_SINCE) and not network.disable_check


def _ip_of(attachment: CachedAttachment) -> str | None:
    if attachment.result is None:
        return None
    try:
        ip = parse_result(attachment.result).pod_ip(attachment.ifname)
    except CNIError:
        return None
    return str(ipaddress.ip_interface(ip.address).ip) if ip is not None else None
