"""Write a volume's files so a reader sees the old set or the new set, never a mix: upstream
pkg/volume/util/atomic_writer.go (AtomicWriter.Write), the way configMap, secret, downwardAPI and projected
volumes are kept up to date while containers read them.

Layout inside the volume directory, as upstream:

    ..2026_11_23_09_40_01.123456789/   the payload of one write (mode 0755), files with their modes
    ..data -> ..2026_11_23_09_40_01.123456789
    key -> ..data/key                  one symlink per top-level name of the payload

An update writes a new timestamped directory, points a fresh `..data_tmp` symlink at it and renames it over
`..data` (rename(2) is atomic), then removes top-level links the new payload no longer has and the old
timestamped directory. Links are relative, so a bind mount of the volume shows the same files inside the
container. A write whose payload equals what is on disk changes nothing (so no inotify storm for readers).

Payload paths are checked as upstream validatePath: relative, no `..` element, not starting with `..`
(reserved for the writer's own names), at most 4096 bytes, each element at most 255.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DATA_DIR = "..data"
_DATA_TMP = "..data_tmp"


class PayloadError(ValueError):
    """A payload path the writer refuses (absolute, `..`, reserved)."""


@dataclass(frozen=True)
class FileProjection:
    """One file of a payload: its bytes and permission bits (upstream volumeutil.FileProjection)."""

    data: bytes
    mode: int = 0o644


def validate_path(path: str) -> None:
    """Upstream validatePath."""
    if not path:
        raise PayloadError("invalid path: must not be empty")
    if len(path) > 4096:
        raise PayloadError(f"invalid path: must be less than or equal to 4096 characters: {path!r}")
    if os.path.isabs(path):
        raise PayloadError(f"invalid path: must be relative path: {path}")
    parts = path.split("/")
    if any(len(part) > 255 for part in parts):
        raise PayloadError(f"invalid path: each element must be at most 255 characters: {path}")
    if ".." in parts:
        raise PayloadError(f"invalid path: must not contain '..': {path}")
    if path.startswith(".."):
        raise PayloadError(f"invalid path: must not start with '..': {path}")


def _current(target: Path) -> tuple[Path | None, dict[str, FileProjection]]:
    """The timestamped directory `..data` points at, and what it holds."""
    link = target / DATA_DIR
    if not link.is_symlink():
        return None, {}
    old = target / os.readlink(link)
    held: dict[str, FileProjection] = {}
    for root, _dirs, files in os.walk(old):
        for name in files:
            path = Path(root) / name
            held[str(path.relative_to(old))] = FileProjection(path.read_bytes(), path.stat().st_mode & 0o7777)
    return old, held


def _timestamped_dir(target: Path) -> Path:
    stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())
    new = Path(tempfile.mkdtemp(prefix=stamp, dir=target))
    new.chmod(0o755)
    return new


def _write_payload(directory: Path, payload: Mapping[str, FileProjection]) -> None:
    for path, projection in payload.items():
        file = directory / path
        file.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        file.write_bytes(projection.data)
        file.chmod(projection.mode)


def write_atomically(target: Path, payload: Mapping[str, FileProjection]) -> bool:
    """Make `target` hold exactly `payload` (see the module notes); True when anything changed."""
    for path in payload:
        validate_path(path)
    target.mkdir(parents=True, exist_ok=True)
    old_dir, held = _current(target)
    wanted_tops = {path.split("/")[0] for path in payload}
    if old_dir is not None and held == dict(payload):
        return False
    new_dir = _timestamped_dir(target)
    _write_payload(new_dir, payload)
    for top in sorted(wanted_tops):
        link = target / top
        if not link.is_symlink():
            link.symlink_to(f"{DATA_DIR}/{top}")
    tmp_link = target / _DATA_TMP
    if tmp_link.is_symlink():
        tmp_link.unlink()
    tmp_link.symlink_to(new_dir.name)
    os.rename(tmp_link, target / DATA_DIR)
    for entry in target.iterdir():
        if entry.name.startswith(".."):
            continue
        if entry.is_symlink() and entry.name not in wanted_tops:
            entry.unlink()
    if old_dir is not None and old_dir.name.startswith("..") and old_dir.parent == target:
        shutil.rmtree(old_dir, ignore_errors=True)
    return True
