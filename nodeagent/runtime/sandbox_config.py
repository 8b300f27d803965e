"""A pod's sandbox configuration, decided purely from the pod: upstream pkg/kubelet/kuberuntime/
kuberuntime_sandbox.go generatePodSandboxConfig (with kuberuntime_sandbox_linux.go
generatePodSandboxLinuxConfig) and pkg/kubelet/kuberuntime/helpers.go (BuildPodLogsDirectory).

The result is the runtime's `cri.PodSandboxConfig`: the sandbox's metadata (pod name, uid, namespace, the
attempt), its hostname (spec.hostname or the pod name, cut to 63 characters without a trailing `-` or `.`,
upstream's GeneratePodHostNameAndDomain; none with the node's network, whose hostname stays), the pod's
log directory (`/var/log/pods/<namespace>_<name>_<uid>`), its DNS config (what the kubelet writes into
the pod's resolv.conf, `pod_files.pod_dns_config`), the hostPorts of its containers, the kubelet's labels
and annotations (`labels.py`), and which namespaces are the node's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.typed.core import Pod
from control.util.resolvconf import ResolvConf
from nodeagent.runtime import labels as L
from nodeagent.runtime.cri import DNSConfig, LinuxSandboxOptions, PodSandboxConfig, PortMapping

POD_LOGS_ROOT = "/var/log/pods"  # upstream podLogsRootDirectory
MAX_HOSTNAME = 63


def sandbox_hostname(pod: Mapping[str, Any]) -> str:
    """spec.hostname or the pod name, cut to 63 characters without a trailing `-`/`.` (upstream's
    truncatePodHostnameIfNeeded)."""
    view = Pod(pod)
    name = view.spec.hostname or view.metadata.name
    return name[:MAX_HOSTNAME].rstrip("-.") if len(name) > MAX_HOSTNAME else name


def port_mappings(pod: Mapping[str, Any]) -> tuple[PortMapping, ...]:
    """Every container port with a hostPort (upstream generatePodSandboxConfig's portMappings)."""
    return tuple(PortMapping(protocol=port.protocol or "TCP", container_port=port.container_port,
                             host_port=port.host_port, host_ip=port.host_ip)
                 for container in Pod(pod).spec.containers for port in container.ports if port.host_port)


def build_sandbox_config(pod: Mapping[str, Any], *, attempt: int, extra_labels: Mapping[str, str] | None = None,
                         dns: ResolvConf | None = None, logs_root: str = POD_LOGS_ROOT) -> PodSandboxConfig:
    """The sandbox of `pod` for this attempt; `dns` is the pod's resolver config when known."""
    view = Pod(pod)
    spec = view.spec
    metadata = L.sandbox_metadata(pod, attempt)
    linux = LinuxSandboxOptions(
        host_network=spec.host_network, host_ipc=spec.host_ipc, host_pid=spec.host_pid,
        sysctls=tuple((str(s.get("name", "")), str(s.get("value", ""))) for s in spec.security_context.sysctls))
    return PodSandboxConfig(
        metadata=metadata,
        hostname="" if spec.host_network else sandbox_hostname(pod),
        log_directory=f"{logs_root}/{metadata.namespace}_{metadata.name}_{metadata.uid}",
        dns_config=None if dns is None else DNSConfig(dns.nameservers, dns.searches, dns.options),
        port_mappings=port_mappings(pod),
        labels=L.sandbox_labels(metadata, extra=extra_labels),
        annotations=L.sandbox_annotations(pod, attempt),
        linux=linux,
    )
