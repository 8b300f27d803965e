"""Secrets written so that only their owner ever reads them, durably: control/util/privatefiles.py, which the
API server uses for its own tokens, serves the composition root's credentials too."""

from __future__ import annotations

from control.util.privatefiles import write_private

__all__ = ["write_private"]
