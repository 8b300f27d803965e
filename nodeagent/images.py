"""The images slimkube needs on machines with no registry: the pod sandbox, a small test image and a
Python image for in-cluster clients.

- `slimkube/pause:1`: our own static pause program (nodeagent/pause/pause.c), compiled with gcc and
  `docker import`ed with `ENTRYPOINT ["/pause"]`. The kubelet calls `ensure_pause_image` at start-up, so a
  node never needs to pull its sandbox image (upstream pulls registry.k8s.io/pause instead).
- `slimkube/busybox:1`: Debian's busybox-static with every applet linked where busybox itself says it
  lives (`--list-full`): sh, httpd, nc, wget, hostname, sleep, ... enough to write test workloads.

- `slimkube/python:1`: Debian's python3 and python3-kubernetes (the official client) with what they depend
  on, unpacked from Debian's own packages (`apt-get download` of the dependency closure, `dpkg-deb -x`;
  no maintainer script runs, so the package tools, perl and debconf the closure drags in are left out).
  The .deb files are kept in a cache directory (`/var/cache/slimkube/debs`), so a rebuild downloads
  nothing; an image that exists is not built again.

pause and busybox are built from a tar stream made in memory (no temporary root filesystem on disk); the
Python image from a temporary directory the packages are unpacked into. The tags are
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
PYTHON_IMAGE = "slimkube/python:1"
PYTHON_PACKAGES = ("python3", "python3-kubernetes")
# Pulled in by maintainer scripts' needs (debconf, dpkg, perl) or by them in turn; nothing in the image runs
# them, and python3 imports none of them.
PYTHON_LEFT_OUT = frozenset({
    "cdebconf", "debconf", "dpkg", "install-info", "libdebian-installer4", "libnewt0.52", "libperl5.36",
    "libslang2", "libtextwrap1", "perl", "perl-base", "perl-modules-5.36", "tar"})
DEB_CACHE = "/var/cache/slimkube/debs"


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


def closure_from_apt_cache(output: str, *, left_out: frozenset[str] = PYTHON_LEFT_OUT) -> list[str]:
    """The real packages `apt-cache depends --recurse` names (its unindented lines; `<virtual>` ones and
    `left_out` dropped), sorted."""
    names = {line.strip() for line in output.splitlines() if line and not line[0].isspace()}
    return sorted(name for name in names if not name.startswith("<") and name not in left_out)


def debian_closure(packages: tuple[str, ...]) -> list[str]:
    """The packages `packages` need at run time (no recommends or suggests), from apt's lists."""
    apt_cache = shutil.which("apt-cache")
    if apt_cache is None:
        raise ImageBuildError("apt-cache is needed to build the Python image (a Debian host)")
    flags = ["--recurse", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces",
             "--no-enhances"]
    result = subprocess.run([apt_cache, "depends", *flags, *packages], capture_output=True, text=True)
    if result.returncode != 0:
        raise ImageBuildError(f"apt-cache depends failed:\n{result.stderr}")
    return closure_from_apt_cache(result.stdout)


def fetch_debs(names: list[str], cache: Path) -> list[Path]:
    """Each package's .deb from `cache`, downloaded there (`apt-get download`) when missing."""
    cache.mkdir(parents=True, exist_ok=True)
    missing = [name for name in names if not any(cache.glob(f"{name}_*.deb"))]
    if missing:
        result = subprocess.run(["apt-get", "download", "-q", *missing], cwd=cache, capture_output=True, text=True)
        if result.returncode != 0:
            raise ImageBuildError(f"apt-get download failed (is the package list current? apt-get update):\n"
                                  f"{result.stderr}")
    debs = []
    for name in names:
        found = sorted(cache.glob(f"{name}_*.deb"))
        if not found:
            raise ImageBuildError(f"no .deb of {name} in {cache} after apt-get download")
        debs.append(found[-1])
    return debs


def python_rootfs(cache: str = DEB_CACHE) -> bytes:
    """A tar of Debian's python3 and the official client, unpacked from their packages."""
    debs = fetch_debs(debian_closure(PYTHON_PACKAGES), Path(cache))
    with tempfile.TemporaryDirectory(prefix="slimkube-python-") as tmp:
        root = Path(tmp)
        for deb in debs:
            subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True, capture_output=True)
        for directory in ("tmp", "root", "proc", "sys", "dev"):
            (root / directory).mkdir(exist_ok=True)
        (root / "tmp").chmod(0o1777)
        (root / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n"
                                             "nobody:x:65534:65534:nobody:/:/bin/false\n")
        (root / "etc" / "group").write_text("root:x:0:\nnogroup:x:65534:\n")
        if not (root / "usr" / "bin" / "python3").exists():
            raise ImageBuildError("the unpacked packages hold no /usr/bin/python3")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for entry in sorted(root.iterdir()):
                tar.add(str(entry), arcname=entry.name)
        return buf.getvalue()


PAUSE = ImageSpec(PAUSE_IMAGE, ('ENTRYPOINT ["/pause"]',), pause_rootfs)
BUSYBOX = ImageSpec(BUSYBOX_IMAGE, ('CMD ["sh"]', "ENV PATH=/bin:/sbin:/usr/bin:/usr/sbin"), busybox_rootfs)
PYTHON = ImageSpec(PYTHON_IMAGE, ('CMD ["python3"]', "ENV PATH=/usr/local/bin:/usr/bin:/bin",
                                  "ENV PYTHONDONTWRITEBYTECODE=1"), python_rootfs)


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
