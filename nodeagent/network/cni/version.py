"""CNI specification versions (upstream pkg/version): parse "x.y.z" and compare.

The gates that matter to a runtime: CHECK and a DEL with the cached `prevResult` exist from 0.4.0; a
result carries `ips`/`interfaces` from 0.3.0 (before that `ip4`/`ip6`).
"""

from __future__ import annotations

import re

CHECK_SINCE = "0.4.0"  # CHECK, and DEL given the cached result as prevResult
LIST_RESULT_SINCE = "0.3.0"  # results with interfaces and ips lists
_SEMVER = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of "x.y.z"; an empty version is the spec's oldest, 0.1.0 (libcni's default).
    ValueError for anything else."""
    match = _SEMVER.fullmatch(version or "0.1.0")
    if match is None:
        raise ValueError(f"invalid CNI version {version!r}: expected x.y.z")
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def at_least(version: str, minimum: str) -> bool:
    return parse(version) >= parse(minimum)
