"""Files only their owner reads, written so that they survive a crash whole (the admin and node tokens, the
admin kubeconfig, component credentials), and the data directory that holds them kept private.

A file is created 0600 under a temporary name (never chmod-ed after the fact, which leaves a moment when
others can open it), written, fsynced, renamed into place, and then its directory is fsynced too: without
the last two a power loss just after a start can leave an empty token file, and the next start would
make a new token that no agent or kubeconfig knows.

The data directory is made 0700, and checked again at every start: a directory that others may read or
enter is narrowed back to 0700 with a warning (upstream k3s keeps its data dir 0700 for the same reason).
A world-writable sticky directory (`/tmp` itself) is refused rather than narrowed, as is anything that is
not a directory.
"""

from __future__ import annotations

import logging
import os
import stat

log = logging.getLogger(__name__)


class PrivateDirError(ValueError):
    """A data directory that cannot be made private."""


def write_private(path: str, text: str) -> None:
    """`text` into `path`, mode 0600, replacing what was there at once and durably."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = f"{path}.tmp"
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)  # a .tmp left by a crash may have had another mode
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    sync_directory(directory)


def sync_directory(directory: str) -> None:
    """fsync a directory, so a rename or a new file in it is on disk."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def ensure_private_dir(path: str) -> None:
    """Make `path` (and its parents) if absent; make sure only its owner may read or enter it."""
    if os.path.lexists(path) and not os.path.isdir(path):
        raise PrivateDirError(f"data dir {path} is not a directory")
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.stat(path)
    mode = stat.S_IMODE(info.st_mode)
    if not mode & 0o077:
        return
    if mode & stat.S_ISVTX and mode & 0o002:
        raise PrivateDirError(f"data dir {path} is a shared world-writable directory (mode {mode:04o}); "
                              "give the server a directory of its own")
    log.warning("data dir %s had mode %04o; narrowing it to 0700", path, mode)
    os.chmod(path, 0o700)
