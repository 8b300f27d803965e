"""The two images slimkube needs on machines with no registry: the pod sandbox and a small test image.

- `slimkube/pause:1`: our own static pause program (nodeagent/pause/pause.c), compiled with gcc and
  `docker import`ed with `ENTRYPOINT ["/pause"]`. The kubelet calls `ensure_pause_image` at start-up, so a
  node never needs to pull its sandbox image (upstream pulls registry.k8s.io/pause instead).
- `slimkube/busybox:1`: Debian's busybox-static with every applet linked where busybox itself says it
  lives (`--list-full`): sh, httpd, nc, wget, hostname, sleep, ... enough to write test workloads.

Both are built from a tar stream made in memory (no temporary root filesystem on disk). The tags are
fixed and not `:latest` on purpose: upstream's pull policy makes `:latest` (or no tag) mean Always, which
fails with no registry, while a pinned tag means IfNotPresent and uses the local image.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any, Protocol

import docker.errors

PAUSE_IMAGE = "slimkube/pause:1"
BUSYBOX_IMAGE = "slimkube/busybox:1"


class ImageAPI(Protocol):
    """The slice of docker's low-level `APIClient` this module uses."""

    def inspect_image(self, image: str) -> dict[str, Any]: ...

    def import_image_from_data(
        self, data: bytes, repository: str | None = None, tag: str | None = None, changes: list[str] | None = None
    ) -> object: ...


class ImageBuildError(RuntimeError):
    """A required tool is missing or failed (gcc, busybox-static)."""


@dataclass(frozen=True)
class ImageSpec:
    """How to make one image: its reference, the Dockerfile-style changes, and a rootfs tar builder."""

    ref: str
    changes: tuple[str, ...]
    rootfs: Callable[[], bytes]


def _add_dir(tar: tarfile.TarFile, name: str, mode: int = 0o755) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    tar.addfile(info)


def _add_file(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def _add_symlink(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    tar.addfile(info)


def compile_pause(out_dir: Path) -> Path:
    """Compile pause.c statically into `out_dir`; returns the binary's path."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise ImageBuildError("gcc is needed to build the pause image (apt-get install gcc libc6-dev)")
    source = out_dir / "pause.c"
    source.write_bytes(files("nodeagent.pause").joinpath("pause.c").read_bytes())
    binary = out_dir / "pause"
    result = subprocess.run(
        [gcc, "-static", "-Os", "-s", "-Wall", "-o", str(binary), str(source)], capture_output=True, text=True
    )
    if result.returncode != 0:
        raise ImageBuildError(f"compiling pause.c failed (is libc6-dev installed?):\n{result.stderr}")
    return binary


def pause_rootfs() -> bytes:
    """A tar holding only /pause."""
    with tempfile.TemporaryDirectory(prefix="slimkube-pause-") as tmp:
        binary = compile_pause(Path(tmp)).read_bytes()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        _add_file(tar, "pause", binary, mode=0o755)
    return buf.getvalue()


def busybox_rootfs(busybox: str = "/bin/busybox") -> bytes:
    """A tar with busybox, a link per applet at the path busybox gives for it, and a minimal /etc."""
    if not Path(busybox).is_file():
        raise ImageBuildError(f"{busybox} not found (apt-get install busybox-static)")
    applets = subprocess.run([busybox, "--list-full"], capture_output=True, text=True, check=True).stdout.split()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "proc", "sys", "dev", "root", "var", "var/www"):
            _add_dir(tar, d)
        _add_dir(tar, "tmp", mode=0o1777)
        _add_file(tar, "bin/busybox", Path(busybox).read_bytes(), mode=0o755)
        for path in applets:
            if Path(path).name == "busybox":  # the list names busybox itself; a link would replace the binary
                continue
            _add_symlink(tar, path, "/bin/busybox")  # absolute links resolve inside the container's root
        _add_file(tar, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")
        _add_file(tar, "etc/group", b"root:x:0:\nnogroup:x:65534:\n")
        _add_file(tar, "etc/hostname", b"busybox\n")
    return buf.getvalue()


PAUSE = ImageSpec(PAUSE_IMAGE, ('ENTRYPOINT ["/pause"]',), pause_rootfs)
BUSYBOX = ImageSpec(BUSYBOX_IMAGE, ('CMD ["sh"]', "ENV PATH=/bin:/sbin:/usr/bin:/usr/sbin"), busybox_rootfs)


def image_present(api: ImageAPI, ref: str) -> bool:
    try:
        api.inspect_image(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_image(api: ImageAPI, spec: ImageSpec, *, rebuild: bool = False) -> bool:
    """Import `spec` unless the image is there already; returns whether it was built."""
    if not rebuild and image_present(api, spec.ref):
        return False
    repository, tag = spec.ref.rsplit(":", 1)
    api.import_image_from_data(spec.rootfs(), repository=repository, tag=tag, changes=list(spec.changes))
    if not image_present(api, spec.ref):
        raise ImageBuildError(f"docker import of {spec.ref} reported success but the image is missing")
    return True


def ensure_pause_image(api: ImageAPI) -> bool:
    """What the kubelet calls at start-up: a node builds its own sandbox image."""
    return ensure_image(api, PAUSE)
