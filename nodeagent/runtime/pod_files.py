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

resolv.conf: there is no cluster DNS yet, so ClusterFirst (and ClusterFirstWithHostNet, and Default) give
the node's resolver config with loopback nameservers dropped (a pod's 127.0.0.53 is not the node's, as
Docker also filters); dnsPolicy None uses only `dnsConfig`; `dnsConfig` nameservers/searches/options are
appended for every policy, as upstream merges them.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MANAGED_HOSTS_HEADER = "# Kubernetes-managed hosts file.\n"
MANAGED_HOSTS_HEADER_HOST_NETWORK = "# Kubernetes-managed hosts file (host network).\n"
CLUSTER_DOMAIN = "cluster.local"


def etc_hosts_path(pod_dir: str | Path) -> str:
    return str(Path(pod_dir) / "etc-hosts")


def resolv_conf_path(pod_dir: str | Path) -> str:
    return str(Path(pod_dir) / "resolv.conf")


def termination_log_path(pod_dir: str | Path, container_name: str, attempt: int) -> str:
    return str(Path(pod_dir) / "containers" / container_name / str(attempt))


def pod_hostname(pod: Mapping[str, Any]) -> tuple[str, str]:
    """(hostname, domain) as upstream GeneratePodHostNameAndDomain: spec.hostname or the pod name cut to
    63 characters (without a trailing '-' or '.'); the domain from spec.subdomain."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    hostname = spec.get("hostname") or meta.get("name", "")
    if len(hostname) > 63:
        hostname = hostname[:63].rstrip("-.")
    domain = ""
    if spec.get("subdomain"):
        domain = f"{spec['subdomain']}.{meta.get('namespace') or 'default'}.svc.{CLUSTER_DOMAIN}"
    return hostname, domain


def _host_aliases(pod: Mapping[str, Any]) -> str:
    aliases = (pod.get("spec") or {}).get("hostAliases") or []
    if not aliases:
        return ""
    lines = ["", "# Entries added by HostAliases."]
    lines += [f"{alias.get('ip', '')}\t" + "\t".join(alias.get("hostnames") or []) for alias in aliases]
    return "\n".join(lines) + "\n"


def hosts_content(pod: Mapping[str, Any], pod_ips: Sequence[str], *, node_hosts: str = "") -> str:
    """The pod's /etc/hosts; `node_hosts` is the node's file, used for hostNetwork pods."""
    if (pod.get("spec") or {}).get("hostNetwork"):
        return MANAGED_HOSTS_HEADER_HOST_NETWORK + node_hosts + _host_aliases(pod)
    hostname, domain = pod_hostname(pod)
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


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def resolv_conf_content(pod: Mapping[str, Any], node_resolv: str) -> str:
    """The pod's /etc/resolv.conf from the node's (see the module notes)."""
    spec = pod.get("spec") or {}
    nameservers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    if spec.get("dnsPolicy") != "None":
        for line in node_resolv.splitlines():
            fields = line.split()
            if not fields or fields[0].startswith(("#", ";")):
                continue
            if fields[0] == "nameserver" and len(fields) > 1 and not _is_loopback(fields[1]):
                nameservers.append(fields[1])
            elif fields[0] in ("search", "domain"):
                searches = fields[1:]
            elif fields[0] == "options":
                options += fields[1:]
    config = spec.get("dnsConfig") or {}
    nameservers += [ns for ns in config.get("nameservers") or [] if ns not in nameservers]
    searches += [s for s in config.get("searches") or [] if s not in searches]
    for option in config.get("options") or []:
        text = option.get("name", "") + (f":{option['value']}" if option.get("value") else "")
        options = [o for o in options if o.split(":")[0] != option.get("name")] + [text]
    lines = [f"nameserver {ns}" for ns in nameservers[:3]]  # the resolver reads at most three
    if searches:
        lines.append("search " + " ".join(searches))
    if options:
        lines.append("options " + " ".join(options))
    return "\n".join(lines) + "\n"


def _write(path: str, content: str, mode: int) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as handle:
        handle.write(content)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_pod_files(pod_dir: str | Path, pod: Mapping[str, Any], pod_ips: Sequence[str], *,
                    node_hosts_file: str = "/etc/hosts", node_resolv_file: str = "/etc/resolv.conf") -> None:
    """Write (or refresh) the pod's etc-hosts and resolv.conf, 0644 as upstream. Replaced by rename; a
    running container keeps the file it mounted, so call this before creating containers."""
    Path(pod_dir).mkdir(parents=True, exist_ok=True)
    node_hosts = Path(node_hosts_file).read_text() if (pod.get("spec") or {}).get("hostNetwork") else ""
    node_resolv = Path(node_resolv_file).read_text() if os.path.exists(node_resolv_file) else ""
    _write(etc_hosts_path(pod_dir), hosts_content(pod, pod_ips, node_hosts=node_hosts), 0o644)
    _write(resolv_conf_path(pod_dir), resolv_conf_content(pod, node_resolv), 0o644)


def ensure_termination_log(pod_dir: str | Path, container_name: str, attempt: int) -> str:
    """Create the empty termination message file for this attempt (0666) and return its host path."""
    path = termination_log_path(pod_dir, container_name, attempt)
    os.makedirs(os.path.dirname(path), mode=0o750, exist_ok=True)
    with open(path, "a"):
        pass
    os.chmod(path, 0o666)
    return path
