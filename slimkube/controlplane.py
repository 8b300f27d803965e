"""The control plane in k3s's order (k3s pkg/daemons/control/server.go): storage and the API server
first (APIServer.start opens the store, bootstraps, then listens), then — once it answers — the
controller manager with the server's admin credentials; the scheduler joins here with its issue.
Stopping goes the other way: the controllers first, while their last requests still reach the server.

Each part after the API server can be switched off by upstream's name (`--disable endpoint`, …), as
k3s's `--disable-*` flags and kube-controller-manager's `--controllers=-name` do; `parse_disable`
refuses a name nothing here knows, before anything starts.

With leader election on (the default, as upstream's `--leader-elect`), the controller manager runs only
while this server holds the Lease `kube-system/kube-controller-manager` (leadership.py), so two servers
on one etcd serve the API together and run the controllers once.

The controllers' settings (`--node-monitor-grace-period`, …) come as one ControllerManagerConfiguration,
handed down unchanged to the manager.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Collection

from control.apiserver.server import APIServer, ServerConfig
from control.client.rest import RESTClient
from control.controllers.manager import (
    CONTROLLERS,
    DEFAULT_CONFIGURATION,
    ControllerManager,
    ControllerManagerConfiguration,
)
from control.util.loopthread import LoopThread
from slimkube.leadership import DEFAULT_ELECTION, ElectedPart, LeaderElection, Part, server_identity

CONTROLLER_MANAGER_LEASE = "kube-controller-manager"


def known_components() -> list[str]:
    """The names `--disable` takes: every controller the manager knows (later also the scheduler)."""
    return list(CONTROLLERS)


def parse_disable(text: str) -> frozenset[str]:
    """`--disable a,b` → {"a", "b"}; ValueError naming the unknown ones and the known ones."""
    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    known = known_components()
    if unknown := sorted(names - set(known)):
        raise ValueError(f"unknown {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def start_controller_manager(server: APIServer, *, disable: Collection[str] = (),
                             settings: ControllerManagerConfiguration = DEFAULT_CONFIGURATION) -> ControllerManager:
    """The controllers `slimkube server` runs (all but `disable`), against `server`, started."""
    manager = ControllerManager(server.client_config(), disabled=disable, settings=settings)
    manager.start()
    return manager


class ElectedControllers:
    """The controller manager under leader election: started and stopped with the Lease."""

    def __init__(self, server: APIServer, *, disable: Collection[str], election: LeaderElection,
                 settings: ControllerManagerConfiguration = DEFAULT_CONFIGURATION) -> None:
        self._client = RESTClient(server.client_config(), user_agent="slimkube-controller-manager/leader-election")
        self._part = ElectedPart(self._client, lease=CONTROLLER_MANAGER_LEASE,
                                 identity=server_identity(server.config.data_dir), election=election,
                                 start=lambda: start_controller_manager(server, disable=disable, settings=settings))

    def start(self) -> None:
        self._part.start()

    def stop(self) -> None:
        self._part.stop()
        self._client.close()


def start_controllers(server: APIServer, *, disable: Collection[str] = (),
                      election: LeaderElection = DEFAULT_ELECTION,
                      settings: ControllerManagerConfiguration = DEFAULT_CONFIGURATION) -> Part:
    """The controller manager, under leader election unless `election.enabled` is off."""
    if not election.enabled:
        return start_controller_manager(server, disable=disable, settings=settings)
    elected = ElectedControllers(server, disable=disable, election=election, settings=settings)
    elected.start()
    return elected


class BackgroundServer:
    """An APIServer on its own event-loop thread, so the main thread stays free for signals, and the
    controller manager (all but `disable`) once it is ready; `stop` ends the controllers first."""

    def __init__(self, config: ServerConfig, *, disable: Collection[str] = (),
                 election: LeaderElection = DEFAULT_ELECTION,
                 settings: ControllerManagerConfiguration = DEFAULT_CONFIGURATION) -> None:
        self.server = APIServer(config)
        self._disable = frozenset(disable)
        self._election = election
        self._settings = settings
        self._thread = LoopThread("apiserver")
        self._controllers: Part | None = None

    def start(self, *, timeout: float = 120.0) -> APIServer:
        self._thread.start()
        self._thread.run(self.server.start(), timeout=timeout)
        self._controllers = start_controllers(self.server, disable=self._disable, election=self._election,
                                              settings=self._settings)
        return self.server

    def stop(self, *, timeout: float = 30.0) -> None:
        if self._controllers is not None:
            self._controllers.stop()
            self._controllers = None
        if not self._thread.running:
            return
        try:
            self._thread.run(self.server.stop(), timeout=timeout)
        finally:
            self._thread.stop()


async def serve_forever(config: ServerConfig, *, disable: Collection[str] = (),
                        election: LeaderElection = DEFAULT_ELECTION,
                        settings: ControllerManagerConfiguration = DEFAULT_CONFIGURATION,
                        ready: Callable[[APIServer], None] | None = None,
                        stopping: Callable[[], None] | None = None) -> None:
    """`slimkube server`: the API server, then the controller manager, until SIGINT/SIGTERM; then the
    controllers stop first (their last requests still reach the server), then the server. `ready` runs once
    both serve, `stopping` once a signal has come and before anything stops (systemd's READY=1/STOPPING=1)."""
    server = APIServer(config)
    await server.start()
    manager = start_controllers(server, disable=disable, election=election, settings=settings)
    if ready is not None:
        ready(server)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        if stopping is not None:
            stopping()
        await asyncio.to_thread(manager.stop)
        await server.stop()
