"""A container's `volumeMounts` as the runtime's bind mounts and tmpfs mounts: upstream kubelet_pods.go
makeMounts (the runtime, nodeagent/runtime/docker.py, turns them into Docker bind strings as dockershim's
generateMountBindings did).

* A bind mount is read-only for readOnly (or a volume whose every mount is read-only: configMap, secret,
  downwardAPI, projected); mountPropagation None/unset, HostToContainer or Bidirectional is kept as the
  mount's propagation (anything else is refused).
* `subPath` (or `subPathExpr`, expanded with the container's environment) must be relative and contain
  no `..` element (upstream messages); it is created as a directory when missing, as upstream does, and
  its resolved path must stay inside the volume: a symlink a container planted in an emptyDir pointing at
  `/` is refused rather than followed. (Upstream also guards the check-then-mount race by bind-mounting
  through an fd; we resolve and check just before the container is created, which leaves that window.)
* A Memory emptyDir becomes a Docker tmpfs at the mount path; subPath into it is refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodeagent.runtime.cri import Mount, Propagation
from nodeagent.runtime.expansion import expand, mapping_for
from nodeagent.volumes.pod_volumes import VolumeError, VolumeInfo, VolumeKind


@dataclass(frozen=True)
class ContainerMounts:
    """The bind mounts and the tmpfs mounts (container path → options) of one container."""

    binds: tuple[Mount, ...] = ()
    tmpfs: Mapping[str, str] = field(default_factory=dict)

    def mounts_path(self, container_path: str) -> bool:
        """Whether some mount already targets `container_path` (then the kubelet must not add its own,
        as upstream skips its /etc/hosts when a volume is mounted there)."""
        return container_path in self.tmpfs or any(b.container_path == container_path for b in self.binds)


def bind_mount(host_path: str, container_path: str, *, read_only: bool, propagation: str | None = None) -> Mount:
    """One bind mount; an unknown mountPropagation is refused."""
    try:
        mode = Propagation(propagation or Propagation.PRIVATE.value)
    except ValueError:
        raise VolumeError(f"invalid MountPropagation mode: {propagation!r}") from None
    return Mount(host_path, container_path, read_only=read_only, propagation=mode)


def _sub_path(mount: Mapping[str, Any], env: Mapping[str, str]) -> str:
    sub_path = mount.get("subPath") or ""
    if mount.get("subPathExpr"):
        sub_path = expand(mount["subPathExpr"], mapping_for(env))
        if "$(" in sub_path:
            raise VolumeError(f"subPathExpr {mount['subPathExpr']!r} has unresolved variables")
    if not sub_path:
        return ""
    if os.path.isabs(sub_path):
        raise VolumeError(f"error SubPath `{sub_path}` must not be an absolute path")
    if ".." in sub_path.split("/"):
        raise VolumeError(f"unable to provision SubPath `{sub_path}`: must not contain '..'")
    return sub_path


def _resolve_sub_path(volume_path: str, sub_path: str, container: str, volume: str) -> str:
    """The host path of `sub_path` inside the volume, created as a directory when missing; refused when
    a symlink takes it outside the volume."""
    root = os.path.realpath(volume_path)
    candidate = os.path.join(volume_path, sub_path)
    resolved = os.path.realpath(candidate)
    if resolved != root and not resolved.startswith(root + os.sep):
        raise VolumeError(f"failed to prepare subPath for volumeMount {volume!r} of container {container!r}")
    if not os.path.lexists(candidate):
        os.makedirs(resolved, mode=os.stat(root).st_mode & 0o7777, exist_ok=True)
    return resolved


def container_mounts(container: Mapping[str, Any], volumes: Mapping[str, VolumeInfo], *,
                     env: Mapping[str, str] | None = None) -> ContainerMounts:
    """The binds and tmpfs mounts of `container` given its pod's set-up volumes; raises VolumeError."""
    name = container.get("name", "")
    binds: list[Mount] = []
    tmpfs: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name", ""))
        if volume is None:
            raise VolumeError(f"cannot find volume {mount.get('name')!r} to mount into container {name!r}")
        target = mount.get("mountPath", "")
        if not os.path.isabs(target):
            target = "/" + target
        sub_path = _sub_path(mount, env or {})
        if volume.kind is VolumeKind.EMPTY_DIR_MEMORY:
            if sub_path:
                raise VolumeError(f"subPath is not supported on Memory emptyDir {volume.name!r} (a Docker tmpfs)")
            options = volume.tmpfs_options + (",ro" if mount.get("readOnly") else "")
            tmpfs[target] = options
            continue
        host_path = volume.host_path
        if sub_path:
            host_path = _resolve_sub_path(host_path, sub_path, name, volume.name)
        binds.append(bind_mount(host_path, target, read_only=bool(mount.get("readOnly")) or volume.read_only,
                               propagation=mount.get("mountPropagation")))
    return ContainerMounts(tuple(binds), tmpfs)
