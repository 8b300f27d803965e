"""What the kubelet's sync layer hands its runtime, built from a pod dict as the sync layer builds it: the
CRI configs of a sandbox and of a container (for tests that drive the runtime directly), and the Docker
labels the sync layer and the Docker runtime put on them together (for tests that make containers by
hand or fake an engine's list)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.runtime import labels as L
from nodeagent.runtime.cri import ContainerConfig, ContainerMetadata, PodSandboxConfig
from nodeagent.runtime.sandbox_config import build_sandbox_config
from nodeagent.runtime.spechash import container_hash


def sandbox_config(pod: Mapping[str, Any], *, attempt: int = 0,
                   extra_labels: Mapping[str, str] | None = None) -> PodSandboxConfig:
    return build_sandbox_config(pod, attempt=attempt, extra_labels=extra_labels)


def container_config(pod: Mapping[str, Any], container: Mapping[str, Any], *, attempt: int = 0,
                     extra_labels: Mapping[str, str] | None = None, **fields: Any) -> ContainerConfig:
    """A ContainerConfig with the identity the sync layer gives `container` and `fields` (image, args,
    mounts, …) as given."""
    name = container["name"]
    return ContainerConfig(metadata=ContainerMetadata(name, attempt),
                           labels=L.container_labels(L.sandbox_metadata(pod, 0), name, extra=extra_labels),
                           annotations=L.container_annotations(pod, container, attempt=attempt,
                                                               spec_hash=container_hash(container)),
                           **fields)


def container_docker_labels(pod: Mapping[str, Any], container: Mapping[str, Any], *, node: str, sandbox_id: str,
                            attempt: int, spec_hash: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    sandbox = L.sandbox_metadata(pod, 0)
    return L.docker_labels(L.container_labels(sandbox, container["name"], extra=extra),
                           L.container_annotations(pod, container, attempt=attempt, spec_hash=spec_hash),
                           L.runtime_labels(L.Kind.CONTAINER, node=node, sandbox_id=sandbox_id))


def sandbox_docker_labels(pod: Mapping[str, Any], *, node: str, attempt: int,
                          extra: Mapping[str, str] | None = None) -> dict[str, str]:
    sandbox = L.sandbox_metadata(pod, attempt)
    return L.docker_labels(L.sandbox_labels(sandbox, extra=extra), L.sandbox_annotations(pod, attempt),
                           L.runtime_labels(L.Kind.SANDBOX, node=node))
