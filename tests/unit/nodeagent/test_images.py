"""The image builders' tar streams, checked without dockerd (a fake busybox lists its applets)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from nodeagent.images import BUSYBOX, PYTHON, ImageSpec, busybox_rootfs, closure_from_apt_cache, ensure_image
from tests.support.fake_docker import FakeDockerAPI


def members(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: m for m in tar.getmembers()}


@pytest.fixture
def fake_busybox(tmp_path: Path) -> str:
    script = tmp_path / "busybox"
    script.write_text("#!/bin/sh\nprintf 'bin/busybox\\nbin/sh\\nusr/bin/wget\\nsbin/ifconfig\\nusr/sbin/httpd\\n'\n")
    script.chmod(0o755)
    return str(script)


def test_busybox_rootfs_links_every_applet_to_the_binary(fake_busybox: str):
    tar = members(busybox_rootfs(fake_busybox))
    assert tar["bin/busybox"].isfile() and tar["bin/busybox"].mode == 0o755
    for applet in ("bin/sh", "usr/bin/wget", "sbin/ifconfig", "usr/sbin/httpd"):
        assert tar[applet].issym() and tar[applet].linkname == "/bin/busybox", applet
    assert tar["tmp"].isdir() and tar["tmp"].mode == 0o1777
    assert {"etc/passwd", "etc/group", "proc", "sys", "dev"} <= tar.keys()


SPEC = ImageSpec("example/img:2", ('CMD ["sh"]',), lambda: b"tar")


@pytest.mark.parametrize(
    ("present", "rebuild", "built"),
    [
        pytest.param(set(), False, True, id="missing-is-built"),
        pytest.param({"example/img:2"}, False, False, id="present-is-kept"),
        pytest.param({"example/img:2"}, True, True, id="rebuild-forces-import"),
    ],
)
def test_ensure_image_imports_only_when_needed(present, rebuild, built):
    api = FakeDockerAPI(images=set(present))
    assert ensure_image(api, SPEC, rebuild=rebuild) is built
    assert api.imports == ([("example/img", "2", ['CMD ["sh"]'])] if built else [])


def test_busybox_image_is_pinned_not_latest():
    # :latest would mean imagePullPolicy Always, which fails with no registry
    assert BUSYBOX.ref.rsplit(":", 1)[1] not in ("", "latest")


def test_the_python_image_closure_keeps_real_packages_and_leaves_the_package_tools_out():
    output = ("python3\n  Depends: python3.11\n  PreDepends: <python3-minimal>\npython3.11\n  Depends: perl\n"
              "<python3-minimal>\nperl\n  Depends: perl-base\ndebconf\nlibc6\npython3.11\n")
    assert closure_from_apt_cache(output) == ["libc6", "python3", "python3.11"]
    assert PYTHON.ref == "slimkube/python:1" and not PYTHON.ref.endswith(":latest")
