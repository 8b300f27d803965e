"""Private files and the private data directory: 0600 files replaced whole, a loosened data dir narrowed back
to 0700 at start, a shared sticky directory refused."""

from __future__ import annotations

import os
import stat

import pytest

from control.util import privatefiles


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_write_private_replaces_the_file_whole_with_mode_0600(tmp_path) -> None:
    path = tmp_path / "dir" / "token"
    privatefiles.write_private(str(path), "one\n")
    (tmp_path / "dir" / "token.tmp").write_text("left by a crash")
    os.chmod(tmp_path / "dir" / "token.tmp", 0o644)
    privatefiles.write_private(str(path), "two\n")
    assert path.read_text() == "two\n" and mode(path) == 0o600
    assert mode(tmp_path / "dir") == 0o700 and not (tmp_path / "dir" / "token.tmp").exists()


def test_a_loosened_data_dir_is_narrowed_back(tmp_path) -> None:
    data = tmp_path / "data"
    privatefiles.ensure_private_dir(str(data))
    assert mode(data) == 0o700
    os.chmod(data, 0o755)
    privatefiles.ensure_private_dir(str(data))
    assert mode(data) == 0o700


def test_a_shared_sticky_directory_is_refused(tmp_path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    with pytest.raises(privatefiles.PrivateDirError, match="world-writable"):
        privatefiles.ensure_private_dir(str(shared))
    assert mode(shared) == 0o1777
    afile = tmp_path / "file"
    afile.write_text("")
    with pytest.raises(privatefiles.PrivateDirError, match="not a directory"):
        privatefiles.ensure_private_dir(str(afile))
