"""Validation of API objects on create and update, per kind, with upstream's field paths, error types and
messages (kubectl prints them and people search for them).

Upstream: pkg/apis/<group>/validation. The modules, each importing only those below it:
- `table.py`: the kind → validator table assembled from the groups, and `validate`, the entry point;
- one module per API group (`core.py`, `apps.py`, `batch.py`, `networking.py`, …), each exporting its
  `VALIDATORS` (and `NAME_VALIDATORS` where a kind's name rule is not a DNS-1123 subdomain); no group
  module imports another;
- `pods.py`: the pod spec and pod template checks that core, apps and batch kinds share;
- `primitives.py`: the JSON field reader `Check`, object metadata, label selectors, int-or-percent.
A contract in pyproject.toml ([tool.importlinter]) keeps that order.
"""

from control.api.validation.table import validate

__all__ = ["validate"]
