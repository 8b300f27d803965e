"""Files the kubelet manages for a pod's containers under the pod directory, and where they live.

Upstream: kubelet_pods.go (getEtcHostsPath, managedHostsFileContent, nodeHostsFileContent,
hostsEntriesFromHostAliases, GeneratePodHostNameAndDomain), kuberuntime_container.go (the termination
message file) and pkg/kubelet/network/dns/dns.go (the pod's resolv.conf).

Host path conventions (the termination message file is the one path of termination messages: the
runtime copies it back out of the exited container, nodeagent/runtime/docker.py):

    <pod_dir>/etc-hosts                                  bind-mounted at /etc/hosts (rw, as upstream)
    <pod_dir>/resolv.conf                                bind-mounted at /etc/resolv.conf (ro)
    <pod_dir>/containers/<container name>/<attempt>      bind-mounted at terminationMessagePath (rw)

Upstream names the termination file with a random id per container; we name it by the attempt (the
restart count label), so the runtime finds an exited container's message from its labels alone, and a
restarted container writes a fresh file. The file is 0666 so a non-root container can write it.

/etc/hosts content, as upstream: the managed header, localhost lines, `<podIP>\t<hostname>` per pod IP
(`<ip>\t<hostname>.<subdomain>.<ns>.svc.<cluster domain>\t<hostname>` with a subdomain), then hostAliases
after "# Entries added by HostAliases.". hostNetwork pods get the node's /etc/hosts under a header.

resolv.conf, as upstream's dns configurer (pkg/kubelet/network/dns/dns.go `GetPodDNS`, pure here:
`pod_dns_config`): the node's resolver config is the base (control/util/resolvconf.py, which also picks
systemd-resolved's real list over a loopback stub); the pod's dnsPolicy then decides —
  ClusterFirst (the default) → nameserver = the cluster DNS (`clusterDNS`), searches
  `<ns>.svc.<domain> svc.<domain> <domain>` followed by the node's, `options ndots:5`; a hostNetwork pod
  falls back to Default, as upstream; without a configured cluster DNS it also falls back to Default and
  the kubelet warns (upstream's `MissingClusterDNS` event);
  ClusterFirstWithHostNet → as ClusterFirst, for hostNetwork pods too;
  Default → the node's config;
  None → nothing but `dnsConfig`.
`dnsConfig` is then merged for every policy (nameservers and searches appended without duplicates, options
merged by name, a later value winning) and the result cut to upstream's limits (3 nameservers, 32 search
domains, 2,048 characters of search line). Departure: a pod in its own network namespace never gets a
loopback nameserver from the node (the node's 127.0.0.53 is not reachable from the pod, as Docker also
filters); a hostNetwork pod keeps them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from control.api.typed.core import Pod
from control.util import resolvconf
from control.util.resolvconf import ResolvConf

MANAGED_HOSTS_HEADER = "# Kubernetes-managed hosts file.\n"
MANAGED_HOSTS_HEADER_HOST_NETWORK = "# Kubernetes-managed hosts file (host network).\n"
CLUSTER_DOMAIN = "cluster.local"
# upstream pkg/apis/core/validation: MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars
MAX_NAMESERVERS = 3
MAX_SEARCHES = 32
MAX_SEARCH_CHARS = 2048
CLUSTER_DNS_OPTIONS = ("ndots:5",)  # upstream defaultDNSOptions


@dataclass(frozen=True)
class DNSSettings:
    """The kubelet's DNS settings (KubeletConfiguration clusterDNS, clusterDomain, resolvConf)."""

    cluster_dns: tuple[str, ...] = ()
    cluster_domain: str = CLUSTER_DOMAIN
    resolv_conf: str = resolvconf.HOST_RESOLV_CONF  # the node's; a loopback-only one yields to systemd-resolved's


NO_CLUSTER_DNS = DNSSettings()


def etc_hosts_path(pod_dir: str | Path) -> str:
    return str(Path(pod_dir) / "etc-hosts")


def resolv_conf_path(pod_dir: str | Path) -> str:
    return str(Path(pod_dir) / "resolv.conf")


def termination_log_path(pod_dir: str | Path, container_name: str, attempt: int) -> str:
    return str(Path(pod_dir) / "containers" / container_name / str(attempt))


def pod_hostname(pod: Mapping[str, Any], cluster_domain: str = CLUSTER_DOMAIN) -> tuple[str, str]:
    """(hostname, domain) as upstream GeneratePodHostNameAndDomain: spec.hostname or the pod name cut to
    63 characters (without a trailing '-' or '.'); the domain from spec.subdomain."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    hostname = spec.get("hostname") or meta.get("name", "")
    if len(hostname) > 63:
        hostname = hostname[:63].rstrip("-.")
    domain = ""
    if spec.get("subdomain"):
        domain = f"{spec['subdomain']}.{meta.get('namespace') or 'default'}.svc.{cluster_domain}"
    return hostname, domain


def _host_aliases(pod: Mapping[str, Any]) -> str:
    aliases = (pod.get("spec") or {}).get("hostAliases") or []
    if not aliases:
        return ""
    lines = ["", "# Entries added by HostAliases."]
    lines += [f"{alias.get('ip', '')}\t" + "\t".join(alias.get("hostnames") or []) for alias in aliases]
    return "\n".join(lines) + "\n"


def hosts_content(pod: Mapping[str, Any], pod_ips: Sequence[str], *, node_hosts: str = "",
                  cluster_domain: str = CLUSTER_DOMAIN) -> str:
    """The pod's /etc/hosts; `node_hosts` is the node's file, used for hostNetwork pods."""
    if Pod(pod).spec.host_network:
        return MANAGED_HOSTS_HEADER_HOST_NETWORK + node_hosts + _host_aliases(pod)
    hostname, domain = pod_hostname(pod, cluster_domain)
    lines = [
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "fe00::0\tip6-mcastprefix",
        "fe00::1\tip6-allnodes",
        "fe00::2\tip6-allrouters",
    ]
    for ip in pod_ips:
        lines.append(f"{ip}\t{hostname}.{domain}\t{hostname}" if domain else f"{ip}\t{hostname}")
    return MANAGED_HOSTS_HEADER + "\n".join(lines) + "\n" + _host_aliases(pod)


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))  # upstream omitDuplicates: first occurrence kept, order kept


def _merge_options(existing: Sequence[str], extra: Sequence[Mapping[str, Any]]) -> list[str]:
    """upstream mergeDNSOptions: by option name, a dnsConfig option replacing the node's of that name.
    (Upstream's result comes out of a Go map in random order; ours keeps first-seen order.)"""
    merged: dict[str, str] = {}
    for text in existing:
        name, _, value = text.partition(":")
        merged[name] = value
    for option in extra:
        merged[str(option.get("name", ""))] = str(option.get("value") or "")
    return [f"{name}:{value}" if value else name for name, value in merged.items()]


def _fit_searches(searches: list[str]) -> tuple[list[str], bool]:
    """upstream formDNSSearchFitsLimits: at most MAX_SEARCH_CHARS of search line, then MAX_SEARCHES domains."""
    cut = False
    if len(" ".join(searches)) > MAX_SEARCH_CHARS:
        line = " ".join(searches)[:MAX_SEARCH_CHARS]
        searches = line[:line.rfind(" ")].split() if " " in line else []
        cut = True
    if len(searches) > MAX_SEARCHES:
        searches, cut = searches[:MAX_SEARCHES], True
    return searches, cut


Warning = tuple[str, str]  # (event reason, message), upstream's reasons and messages


def pod_dns_config(pod: Mapping[str, Any], node: ResolvConf,
                   settings: DNSSettings) -> tuple[ResolvConf, list[Warning]]:
    """The pod's resolver config and the warnings to report (see the module notes)."""
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    host_network = bool(spec.get("hostNetwork"))
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    warnings: list[Warning] = []
    base = node if host_network else node.without_loopback()
    if policy == "None":
        base = ResolvConf()
    elif policy == "ClusterFirstWithHostNet" or (policy == "ClusterFirst" and not host_network):
        if settings.cluster_dns:
            domain = settings.cluster_domain
            cluster_searches = [f"{meta.get('namespace') or 'default'}.svc.{domain}", f"svc.{domain}", domain]
            base = ResolvConf(tuple(settings.cluster_dns),
                              tuple(_unique(cluster_searches + list(node.searches)) if domain else node.searches),
                              CLUSTER_DNS_OPTIONS)
        else:
            warnings.append(("MissingClusterDNS", f"kubelet does not have ClusterDNS IP configured and cannot "
                             f"create Pod using \"{policy}\" policy. Falling back to \"Default\" policy."))
    config = spec.get("dnsConfig") or {}
    nameservers = _unique(list(base.nameservers) + list(config.get("nameservers") or []))
    searches = _unique(list(base.searches) + list(config.get("searches") or []))
    options = _merge_options(base.options, config.get("options") or [])
    if len(nameservers) > MAX_NAMESERVERS:
        warnings.append(("DNSConfigForming", f"Nameserver limits were exceeded, some nameservers have been "
                         f"omitted, the applied nameserver line is: {' '.join(nameservers[:MAX_NAMESERVERS])}"))
        nameservers = nameservers[:MAX_NAMESERVERS]
    searches, cut = _fit_searches(searches)
    if cut:
        warnings.append(("DNSConfigForming", f"Search Line limits were exceeded, some search paths have been "
                         f"omitted, the applied search line is: {' '.join(searches)}"))
    return ResolvConf(tuple(nameservers), tuple(searches), tuple(options)), warnings


def resolv_conf_text(config: ResolvConf) -> str:
    lines = [f"nameserver {ns}" for ns in config.nameservers]
    if config.searches:
        lines.append("search " + " ".join(config.searches))
    if config.options:
        lines.append("options " + " ".join(config.options))
    return "\n".join(lines) + "\n"


def resolv_conf_content(pod: Mapping[str, Any], node_resolv: str, settings: DNSSettings = NO_CLUSTER_DNS) -> str:
    """The pod's /etc/resolv.conf from the node's resolv.conf text (see the module notes)."""
    return resolv_conf_text(pod_dns_config(pod, resolvconf.parse(node_resolv), settings)[0])


def node_resolv_conf(settings: DNSSettings) -> ResolvConf:
    """The node's resolver config the pods' is derived from (read from disk each time: it may change)."""
    return resolvconf.read(resolvconf.node_resolv_conf_path(settings.resolv_conf))


def _write(path: str, content: str, mode: int) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as handle:
        handle.write(content)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_pod_files(pod_dir: str | Path, pod: Mapping[str, Any], pod_ips: Sequence[str], *,
                    node_hosts_file: str = "/etc/hosts", dns: DNSSettings = NO_CLUSTER_DNS) -> list[Warning]:
    """Write (or refresh) the pod's etc-hosts and resolv.conf, 0644 as upstream, and return the DNS
    warnings to report. Replaced by rename; a running container keeps the file it mounted, so call this
    before creating containers."""
    Path(pod_dir).mkdir(parents=True, exist_ok=True)
    node_hosts = Path(node_hosts_file).read_text() if Pod(pod).spec.host_network else ""
    config, warnings = pod_dns_config(pod, node_resolv_conf(dns), dns)
    _write(etc_hosts_path(pod_dir), hosts_content(pod, pod_ips, node_hosts=node_hosts,
                                                  cluster_domain=dns.cluster_domain), 0o644)
    _write(resolv_conf_path(pod_dir), resolv_conf_text(config), 0o644)
    return warnings


def ensure_termination_log(pod_dir: str | Path, container_name: str, attempt: int) -> str:
    """Create the empty termination message file for this attempt (0666) and return its host path."""
    path = termination_log_path(pod_dir, container_name, attempt)
    os.makedirs(os.path.dirname(path), mode=0o750, exist_ok=True)
    with open(path, "a"):
        pass
    os.chmod(path, 0o666)
    return path
