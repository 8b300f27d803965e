"""The scheduler as a part the composition root starts and stops: its own client (user agent
`slimkube-scheduler`), its own informers of pods and nodes, the loop on a thread.

Upstream: cmd/kube-scheduler/app/server.go (`Run`: start the informers, wait for their caches, run
`sched.Run` until the context ends). Mirrors control/controllers/manager.py's ControllerManager: `start()`,
`stop()` (the stop Event ends the watches and the loop, which finishes its bindings and events; then the
client is closed). `metrics` may outlive it (one per process, across leadership terms).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from control.client.informer import InformerFactory
from control.client.kubeconfig import ClientConfig
from control.client.rest import RESTClient
from control.scheduler.metrics import SchedulerMetrics
from control.scheduler.scheduler import Scheduler

log = logging.getLogger(__name__)


class SchedulerServer:
    def __init__(self, config: ClientConfig, *, scheduler_config: Mapping[str, Any] | None = None,
                 metrics: SchedulerMetrics | None = None) -> None:
        self._client = RESTClient(config, user_agent="slimkube-scheduler")
        self._informers = InformerFactory(self._client)
        self.scheduler = Scheduler(self._client, self._informers, config=scheduler_config, metrics=metrics)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scheduler", daemon=True)

    def start(self) -> None:
        self._informers.start(self._stop)
        self._thread.start()

    def synced(self) -> bool:
        """Whether the informers have their first lists (upstream readyz's sched-handler-sync)."""
        return self._informers.wait_for_sync(0)

    def _run(self) -> None:
        try:
            self.scheduler.run(self._stop)
        except Exception:
            log.exception("the scheduler stopped with an error")

    def stop(self, *, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout)
        self.scheduler.metrics.forget_queue()
        self._client.close()
