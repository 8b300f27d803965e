"""The hash of a pod-spec container that decides "this container's definition changed, restart it".

Upstream: pkg/kubelet/container/helpers.go HashContainer (fnv32a over the container's JSON), stored on
the container as the `io.kubernetes.container.hash` label and compared by computePodActions'
containerChanged (kuberuntime_manager.go). Here: SHA-256 over canonical JSON (sorted keys, no spaces),
so the value is the same in every process and across kubelet restarts (Python's hash() is salted per
process and would restart every adopted container). 16 hex digits keep the Docker label short.

Excluded fields, and why:
- `resources` and `resizePolicy`: upstream since 1.27 (InPlacePodVerticalScaling) hashes the container
  without resources and resizes in place instead of restarting. slimkube does not resize in place (a
  `docker update` would be the place), so a resources change simply takes effect at the container's next
  restart; either way it must not restart a healthy container on its own.
Everything else (image, command, args, env, ports, probes, mounts, securityContext, ...) is hashed:
the API server only lets `image` change on a live pod, so in practice an image change restarts the
container, and a static pod whose manifest file is edited restarts the containers that changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

EXCLUDED_FIELDS = frozenset({"resources", "resizePolicy"})


def container_hash(container: Mapping[str, Any]) -> str:
    """Stable hex digest of `container` (a pod spec's container dict) minus EXCLUDED_FIELDS.

    Keys are sorted at every depth, so the digest does not depend on dict order; lists keep their order
    (order is meaningful in args, env, ports)."""
    hashed = {key: value for key, value in container.items() if key not in EXCLUDED_FIELDS}
    text = json.dumps(hashed, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]
