"""Service environment variables, as upstream pkg/kubelet/envvars/envvars.go (FromServices) and
pkg/kubelet/kubelet_pods.go (getServiceEnvVarMap).

Which Services a pod sees: every Service with a cluster IP (not "" and not "None") in the pod's own
namespace when `enableServiceLinks` is true (the API server defaults it to true; a pod without the field
counts as true), and always the master service `kubernetes` of the `default` namespace, even with
service links off. A Service of the pod's namespace named `kubernetes` takes the master's place when
links are on (upstream fills its map in that order).

Per Service, names upper-cased with `-` → `_` (upstream makeEnvVariableName):
`{SVC}_SERVICE_HOST` (the cluster IP), `{SVC}_SERVICE_PORT` (the first port), `{SVC}_SERVICE_PORT_{NAME}`
per named port, and Docker-link style `{SVC}_PORT` (`proto://ip:port` of the first port) and per port
`{SVC}_PORT_{port}_{PROTO}` with `_PROTO`, `_PORT`, `_ADDR`. The container's own env and envFrom win over
these (env.py appends them only where a name is still free).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from control.api.typed.core import Pod, Service, ServicePort

MASTER_NAMESPACE = "default"
MASTER_SERVICES = frozenset({"kubernetes"})


class ServicesNotSynced(Exception):
    """The kubelet has not listed the Services yet: env vars cannot be made (upstream refuses too)."""

    def __init__(self, message: str = "services have not yet been read at least once, cannot construct "
                                      "envvars") -> None:
        super().__init__(message)


def env_name(name: str) -> str:
    """upstream makeEnvVariableName."""
    return name.replace("-", "_").upper()


def cluster_ip(service: Mapping[str, Any]) -> str:
    return Service(service).spec.cluster_ip


def is_service_ip_set(service: Mapping[str, Any]) -> bool:
    """upstream IsServiceIPSet: a cluster IP that is neither empty nor None."""
    return cluster_ip(service) not in ("", "None")


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _link_variables(prefix: str, ip: str, ports: Sequence[ServicePort]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for index, port in enumerate(ports):
        protocol = port.protocol or "TCP"
        number = port.port
        url = f"{protocol.lower()}://{_join(ip, number)}"
        if index == 0:
            out.append((f"{prefix}_PORT", url))
        port_prefix = f"{prefix}_PORT_{number}_{protocol.upper()}"
        out += [(port_prefix, url), (f"{port_prefix}_PROTO", protocol.lower()),
                (f"{port_prefix}_PORT", str(number)), (f"{port_prefix}_ADDR", ip)]
    return out


def from_services(services: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """upstream FromServices: the variables of each Service with a cluster IP, in the order given."""
    out: list[tuple[str, str]] = []
    for service in services:
        view = Service(service)
        ports = view.spec.ports
        if not is_service_ip_set(service) or not ports:
            continue
        ip = cluster_ip(service)
        prefix = env_name(view.metadata.name)
        out.append((f"{prefix}_SERVICE_HOST", ip))
        out.append((f"{prefix}_SERVICE_PORT", str(ports[0].port)))
        out += [(f"{prefix}_SERVICE_PORT_{env_name(p.name)}", str(p.port)) for p in ports if p.name]
        out += _link_variables(prefix, ip, ports)
    return out


def service_env_map(services: Iterable[Mapping[str, Any]], namespace: str,
                    enable_service_links: bool) -> dict[str, str]:
    """upstream getServiceEnvVarMap over the listed Services (all namespaces) for a pod in `namespace`."""
    chosen: dict[str, Mapping[str, Any]] = {}
    for service in services:
        if not is_service_ip_set(service):
            continue
        meta = service.get("metadata") or {}
        name, service_ns = meta.get("name", ""), meta.get("namespace") or "default"
        if service_ns == MASTER_NAMESPACE and name in MASTER_SERVICES:
            chosen.setdefault(name, service)
        elif service_ns == namespace and enable_service_links:
            chosen[name] = service
    return dict(from_services(chosen[name] for name in sorted(chosen)))


def enable_service_links(pod: Mapping[str, Any]) -> bool:
    value = Pod(pod).spec.enable_service_links
    return True if value is None else bool(value)
