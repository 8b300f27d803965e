"""Run a control-plane part only while this server holds its Lease, so several `slimkube server`s on one
etcd serve the API together while one of them runs the controllers and one the scheduler.

Upstream: cmd/kube-controller-manager/app/controllermanager.go and cmd/kube-scheduler/app/server.go run
their loops from `OnStartedLeading` of a client-go LeaderElector on the Lease `kube-system/<component>`,
with identity `<hostname>_<uuid>` and `--leader-elect-lease-duration/-renew-deadline/-retry-period`
(15 s / 10 s / 2 s). The elector itself is control/client/leaderelection.py.

Departures, because here the part lives in the API server's process instead of its own:
- Losing the Lease stops the part and campaigns again, where upstream exits the process (its supervisor
  restarts it); the API server in the same process keeps serving.
- The identity is `<hostname>_<id>` with the id kept in `DIR/server-id`, so a server restarted on the
  same data dir renews its own Lease at once instead of waiting out its previous life's lease (upstream
  waits up to the lease duration). Two servers have two data dirs, so two identities.

A part never runs twice in one process: each leadership term starts it under a lock that the previous
term holds until its part has stopped.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from control.client.leaderelection import LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD, LeaderElector, LeaseClient

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-system"


class Part(Protocol):
    """A started control-plane part (the controller manager, the scheduler)."""

    def stop(self) -> None: ...


def part_health(part: object) -> str | None:
    """What a part's `health()` says (None: healthy, else why not); a part without one is healthy while it
    exists. Read by `kubectl get cs` (control/apiserver/registry/componentstatus.py)."""
    health = getattr(part, "health", None)
    return health() if callable(health) else None


@dataclass(frozen=True)
class LeaderElection:
    """Upstream's LeaderElectionConfiguration, in seconds."""

    enabled: bool = True
    lease_duration: float = LEASE_DURATION
    renew_deadline: float = RENEW_DEADLINE
    retry_period: float = RETRY_PERIOD


DEFAULT_ELECTION = LeaderElection()


def server_identity(data_dir: str) -> str:
    """`<hostname>_<id>`, the id created once in DIR/server-id and kept across restarts."""
    path = os.path.join(data_dir, "server-id")
    try:
        with open(path, encoding="utf-8") as handle:
            server_id = handle.read().strip()
    except FileNotFoundError:
        server_id = ""
    if not server_id:
        os.makedirs(data_dir, exist_ok=True)
        server_id = uuid.uuid4().hex
        temporary = f"{path}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(server_id + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    return f"{socket.gethostname()}_{server_id}"


class ElectedPart:
    """Campaigns for `kube-system/<lease>` and runs `start()`'s part while leading; `stop` ends both."""

    def __init__(self, client: LeaseClient, *, lease: str, identity: str, election: LeaderElection,
                 start: Callable[[], Part]) -> None:
        self.lease = lease
        self._start = start
        self._stop = threading.Event()
        self._term_lock = threading.Lock()  # held by a leadership term for as long as its part runs
        self._elector = LeaderElector(
            client, namespace=LEASE_NAMESPACE, name=lease, identity=identity,
            lease_duration=election.lease_duration, renew_deadline=election.renew_deadline,
            retry_period=election.retry_period, on_started_leading=self._lead,
            on_stopped_leading=self._stopped_leading)
        self._thread = threading.Thread(target=self._campaign, name=f"elect-{lease}", daemon=True)
        self._current: Part | None = None  # the part of the running leadership term

    def is_leader(self) -> bool:
        return self._elector.is_leader()

    def health(self) -> str | None:
        """Healthy while campaigning, and — when leading — while the part it runs is (upstream's
        controller manager /healthz includes its leader-election check the same way)."""
        if not self._thread.is_alive():
            return f"not campaigning for the Lease {LEASE_NAMESPACE}/{self.lease}"
        current = self._current
        return part_health(current) if current is not None else None

    def start(self) -> None:
        self._thread.start()

    def stop(self, *, timeout: float = 30.0) -> None:
        """Stop campaigning (the Lease is released if held), then wait for the running part to stop."""
        self._stop.set()
        if self._thread.ident is not None:  # started (a part stopped before it started has nothing to wait for)
            self._thread.join(timeout)
        if self._term_lock.acquire(timeout=timeout):
            self._term_lock.release()

    def _campaign(self) -> None:
        while not self._stop.is_set():
            self._elector.run(self._stop)

    def _lead(self, lost: threading.Event) -> None:
        with self._term_lock:
            if lost.is_set():  # the term ended before this thread got going
                return
            log.info("%s: became leader (%s)", self.lease, self._elector.identity)
            part = self._start()
            self._current = part
            try:
                lost.wait()
            finally:
                self._current = None
                part.stop()

    def _stopped_leading(self) -> None:
        if not self._stop.is_set():
            log.warning("%s: leadership lost; campaigning again", self.lease)
