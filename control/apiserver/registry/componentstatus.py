"""`componentstatuses` (`kubectl get cs`): the health of the control plane's parts, checked when asked and
never stored (upstream pkg/registry/core/componentstatus/rest.go and validator.go).

Upstream probes the scheduler's and controller manager's `/healthz` over HTTPS on fixed local ports and
each etcd server through the storage's health check, in parallel, with a timeout. Here the checks are
registered by whoever runs the parts: the storage check (`etcd-0`, whatever the backend: it answers
for the store, as k3s's kine does) by the API server itself, `scheduler` and `controller-manager` by the
composition root (slimkube/controlplane.py), which knows whether and where they run. A part nobody
registered is reported Unhealthy, as upstream reports a probe that gets no answer. A check is a blocking
callable returning None when healthy or the error text; it runs in a worker thread, `TIMEOUT` at most.

The resource is deprecated upstream since 1.19 and every answer carries its Warning header
("v1 ComponentStatus is deprecated in v1.19+"), which kubectl prints.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from control.apiserver import status

Check = Callable[[], str | None]
TIMEOUT = 5.0
ORDER = ("scheduler", "controller-manager", "etcd-0")  # upstream lists the servers to probe in this order
WARNING = '299 - "v1 ComponentStatus is deprecated in v1.19+"'
NOT_RUNNING = "not running with this API server"


def component_status(name: str, error: str | None) -> dict[str, Any]:
    """A v1 ComponentStatus: one Healthy condition, message "ok" when healthy, the error otherwise."""
    condition = {"type": "Healthy", "status": "True", "message": "ok"} if error is None else \
        {"type": "Healthy", "status": "False", "error": error}
    return {"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name}, "conditions": [condition]}


class ComponentStatuses:
    """The registered checks, by component name."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}

    def register(self, name: str, check: Check) -> None:
        self._checks[name] = check

    def names(self) -> list[str]:
        return list(dict.fromkeys([*ORDER, *self._checks]))

    async def _probe(self, name: str) -> dict[str, Any]:
        check = self._checks.get(name)
        if check is None:
            return component_status(name, NOT_RUNNING)
        try:
            error = await asyncio.wait_for(asyncio.to_thread(check), timeout=TIMEOUT)
        except TimeoutError:
            error = f"no answer within {TIMEOUT:g}s"
        except Exception as exc:  # noqa: BLE001 — a failing check is an unhealthy component, not a failed request
            error = f"{type(exc).__name__}: {exc}"
        return component_status(name, error)

    async def get(self, name: str) -> dict[str, Any]:
        if name not in self.names():
            raise status.not_found("componentstatus", name)
        return await self._probe(name)

    async def list(self) -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(self._probe(name) for name in self.names())))
