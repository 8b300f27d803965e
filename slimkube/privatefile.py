"""Secrets written so that only their owner ever reads them: created 0600 (not chmod-ed after the fact, which
leaves a moment when others can open the file) under a temporary name, then renamed into place whole."""

from __future__ import annotations

import os


def write_private(path: str, text: str) -> None:
    """`text` into `path`, mode 0600, replacing what was there at once; the directory is made 0700 if absent."""
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    descriptor = os.open(f"{path}.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)  # a .tmp left by a crash may have had another mode
        handle.write(text)
    os.replace(f"{path}.tmp", path)
