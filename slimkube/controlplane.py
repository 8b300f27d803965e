"""The control plane in k3s's order (k3s pkg/daemons/control/server.go): storage and the API server
first (APIServer.start opens the store, bootstraps, then listens), then — once it answers — the
scheduler and the controller manager. Stopping goes the other way: the controllers, then the scheduler,
while their last requests still reach the server.

Each reaches the server over HTTPS as its upstream user (slimkube/componentcreds.py): the scheduler as
`system:kube-scheduler` and the controller manager as `system:kube-controller-manager` (its shared
informers and its Lease), each with a client certificate and kubeconfig of its own in the data dir, and each
controller as its service account (upstream's `--use-service-account-credentials`) with a token this
server holds in memory, so each has only its bootstrap role's rights. A server without TLS (tests'
plain-HTTP servers) has no CA to issue them: there all use the admin credential.

Each part after the API server can be switched off by upstream's name (`--disable endpoint`,
`--disable scheduler`, …), as k3s's `--disable-*` flags and kube-controller-manager's
`--controllers=-name` do; `parse_disable` refuses a name nothing here knows, before anything starts.

With leader election on (the default, as upstream's `--leader-elect`), the scheduler runs only while this
server holds the Lease `kube-system/kube-scheduler`, and the controller manager only while it holds
`kube-system/kube-controller-manager` (leadership.py), so two servers on one etcd serve the API together
and run each part once.

The controllers' settings (`--node-monitor-grace-period`, …) come as one ControllerManagerConfiguration,
handed down unchanged to the manager; the scheduler's (`--scheduler-config`, its checked
KubeSchedulerConfiguration, and where its health and metrics listen) as SchedulerOptions. The scheduler's
HTTP side (control/scheduler/httpserver.py) runs whether or not this server holds the scheduler's Lease,
as a standby kube-scheduler still answers /healthz; its metrics registry outlives leadership terms. An
address already in use is logged and the server runs on without it (upstream's kube-scheduler exits; here
the API server in the same process matters more).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
import signal
import threading
import urllib.request
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from control.apiserver.authentication.tokens import UserInfo
from control.apiserver.registry import componentstatus
from control.apiserver.server import APIServer, ServerConfig
from control.client.kubeconfig import ClientConfig
from control.client.rest import RESTClient
from control.controllers.manager import (
    CONTROLLERS,
    DEFAULT_CONFIGURATION,
    ControllerManager,
    ControllerManagerConfiguration,
)
from control.scheduler.httpserver import SchedulerHTTPServer
from control.scheduler.metrics import SchedulerMetrics
from control.scheduler.server import SchedulerServer
from control.util.loopthread import LoopThread
from slimkube import componentcreds
from slimkube.componentcreds import KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER, Component
from slimkube.leadership import DEFAULT_ELECTION, ElectedPart, LeaderElection, Part, part_health, server_identity

log = logging.getLogger(__name__)

CONTROLLER_MANAGER_LEASE = "kube-controller-manager"
SCHEDULER = "scheduler"
SCHEDULER_LEASE = "kube-scheduler"


def known_components() -> list[str]:
    """The names `--disable` takes: every controller the manager knows, and the scheduler."""
    return [*CONTROLLERS, SCHEDULER]


def parse_disable(text: str) -> frozenset[str]:
    """`--disable a,b` → {"a", "b"}; ValueError naming the unknown ones and the known ones."""
    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    known = known_components()
    if unknown := sorted(names - set(known)):
        raise ValueError(f"unknown {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def component_config(server: APIServer, component: Component) -> ClientConfig:
    """The component's own credential (issued and written if needed), or the admin's on a server with no CA."""
    if server.certs is None:
        return server.client_config()
    return componentcreds.ensure_kubeconfig(server.certs, server.config.data_dir, server.url, component)


def controller_credentials(server: APIServer) -> Callable[[str], ClientConfig] | None:
    """Each controller's credential as its service account: a random token this server authenticates as that
    account's user (componentcreds.py says why not a certificate), one per account for the process's life;
    None (the manager's own) on a server with no CA."""
    certs = server.certs
    if certs is None:
        return None
    tokens: dict[str, str] = {}
    lock = threading.Lock()

    def credential(account: str) -> ClientConfig:
        with lock:
            if account not in tokens:
                component = componentcreds.controller_component(account)
                tokens[account] = secrets.token_urlsafe(32)
                server.authenticator.add(tokens[account], UserInfo(component.user, groups=component.groups))
        return ClientConfig(server=server.url, token=tokens[account], ca_file=certs.ca_path)

    return credential


def start_controller_manager(server: APIServer, *, disable: Collection[str] = (),
                             settings: ControllerManagerConfiguration = DEFAULT_CONFIGURATION,
                             credentials: Callable[[str], ClientConfig] | None = None) -> ControllerManager:
    """The controllers `slimkube server` runs (all but `disable`), against `server`, started, each as its
    service account. The cluster CA the root CA publisher hands out, and the one csrsigning issues from, is
    the server's own (its data dir's ca.crt and ca.key), and legacy token Secrets are signed with the
    server's service account key, unless `settings` name others. `credentials`:
    controller_credentials(server), made once per server and handed to each leadership term's manager
    (None: made here)."""
    if not settings.root_ca_pem and server.certs is not None:
        settings = dataclasses.replace(settings, root_ca_pem=server.certs.ca_pem().decode())
    if not settings.cluster_signing_cert_file and server.certs is not None:
        settings = dataclasses.replace(settings, cluster_signing_cert_file=server.certs.ca_path,
                                       cluster_signing_key_file=server.certs.ca_key_path)
    if not settings.service_account_private_key_file:
        settings = dataclasses.replace(settings, service_account_private_key_file=server.service_account_key_file)
    manager = ControllerManager(component_config(server, KUBE_CONTROLLER_MANAGER),
                                disabled=set(disable) - {SCHEDULER}, settings=settings,
                                controller_credentials=credentials or controller_credentials(server))
    manager.start()
    return manager


@dataclass(frozen=True)
class SchedulerOptions:
    """The scheduler's settings: `config` a checked KubeSchedulerConfiguration (control/scheduler/config.py;
    None: the default profile), `address` where /healthz, /readyz and /metrics listen (None: nowhere)."""

    config: Mapping[str, Any] | None = None
    address: tuple[str, int] | None = None


DEFAULT_SCHEDULER_OPTIONS = SchedulerOptions()


def start_scheduler(server: APIServer, *, config: Mapping[str, Any] | None = None,
                    metrics: SchedulerMetrics | None = None) -> SchedulerServer:
    """The scheduler (`config`'s profiles, else the default one), against `server` as `system:kube-scheduler`,
    started."""
    scheduler = SchedulerServer(component_config(server, KUBE_SCHEDULER), scheduler_config=config, metrics=metrics)
    scheduler.start()
    return scheduler


class SchedulerPart:
    """The scheduler under its Lease (unless election is off) and its HTTP side, which answers on every
    server: healthy always, ready unless this server leads and its scheduler has not synced yet."""

    def __init__(self, server: APIServer, options: SchedulerOptions, election: LeaderElection) -> None:
        self.metrics = SchedulerMetrics()
        self._current: SchedulerServer | None = None
        self.http: SchedulerHTTPServer | None = None
        self._address = options.address or ("127.0.0.1", 0)
        if options.address is not None:
            http = SchedulerHTTPServer(options.address, registry=self.metrics.registry, ready=self._ready)
            try:
                http.start()
                self.http = http
            except OSError as exc:
                log.error("the scheduler's health and metrics are not served on %s:%d: %s", *options.address, exc)

        def term() -> Part:
            self._current = start_scheduler(server, config=options.config, metrics=self.metrics)
            return self._current

        self._elected = _elect(server, term, lease=SCHEDULER_LEASE, user_agent="slimkube-scheduler",
                               election=election, component=KUBE_SCHEDULER)

    def _ready(self) -> bool:
        current = self._current
        return current is None or current.synced()

    def health(self) -> str | None:
        """What `kubectl get cs` shows for the scheduler: its own `/healthz` over HTTP where it serves one
        (upstream's probe of the scheduler's port), else its part's health."""
        if self.http is not None:
            host, _ = self._address
            url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{self.http.port}/healthz"
            try:
                with urllib.request.urlopen(url, timeout=componentstatus.TIMEOUT) as answer:
                    body = answer.read().decode(errors="replace").strip()
            except (OSError, ValueError) as exc:
                return f"Get {url!r}: {exc}"
            if body != "ok":
                return f"{url}: {body}"
        return part_health(self._elected)

    def stop(self) -> None:
        self._elected.stop()
        if self.http is not None:
            self.http.stop()


class Elected:
    """A control-plane part under leader election on `kube-system/<lease>`: started and stopped with the
    Lease (upstream: kube-controller-manager's and kube-scheduler's `--leader-elect`)."""

    def __init__(self, server: APIServer, *, lease: str, user_agent: str, election: LeaderElection,
                 start: Callable[[], Part], component: Component) -> None:
        self._client = RESTClient(component_config(server, component), user_agent=f"{user_agent}/leader-election")
        self._part = ElectedPart(self._client, lease=lease, identity=server_identity(server.config.data_dir),
                                 election=election, start=start)

    def start(self) -> None:
        self._part.start()

    def health(self) -> str | None:
        return self._part.health()

    def stop(self) -> None:
        self._part.stop()
        self._client.close()


def _elect(server: APIServer, start: Callable[[], Part], *, lease: str, user_agent: str,
           election: LeaderElection, component: Component) -> Part:
    if not election.enabled:
        return start()
    elected = Elected(server, lease=lease, user_agent=user_agent, election=election, start=start,
                      component=component)
    elected.start()
    return elected


def start_controllers(server: APIServer, *, disable: Collection[str] = (),
                      election: LeaderElection = DEFAULT_ELECTION,
                      settings: ControllerManagerConfiguration = DEFAULT_CONFIGURATION) -> Part:
    """The controller manager, under leader election unless `election.enabled` is off."""
    credentials = controller_credentials(server)
    return _elect(server, lambda: start_controller_manager(server, disable=disable, settings=settings,
                                                           credentials=credentials),
                  lease=CONTROLLER_MANAGER_LEASE,
                  user_agent="slimkube-controller-manager", election=election, component=KUBE_CONTROLLER_MANAGER)


class _Parts:
    """Started parts stopped in the reverse order of their start."""

    def __init__(self, parts: list[Part]) -> None:
        self._parts = parts

    def stop(self) -> None:
        for part in reversed(self._parts):
            part.stop()


def start_parts(server: APIServer, *, disable: Collection[str] = (),
                election: LeaderElection = DEFAULT_ELECTION,
                settings: ControllerManagerConfiguration = DEFAULT_CONFIGURATION,
                scheduler: SchedulerOptions = DEFAULT_SCHEDULER_OPTIONS) -> Part:
    """What runs after the API server, in k3s's order: the scheduler (unless disabled), then the
    controller manager; each under its own Lease unless `election.enabled` is off."""
    parts: list[Part] = []
    if SCHEDULER not in disable:
        scheduler_part = SchedulerPart(server, scheduler, election)
        parts.append(scheduler_part)
        server.components.register("scheduler", scheduler_part.health)
    controllers = start_controllers(server, disable=disable, election=election, settings=settings)
    parts.append(controllers)
    server.components.register("controller-manager", lambda: part_health(controllers))
    return _Parts(parts)


class BackgroundServer:
    """An APIServer on its own event-loop thread, so the main thread stays free for signals, and the
    scheduler and controller manager (all but `disable`) once it is ready; `stop` ends them first."""

    def __init__(self, config: ServerConfig, *, disable: Collection[str] = (),
                 election: LeaderElection = DEFAULT_ELECTION,
                 settings: ControllerManagerConfiguration = DEFAULT_CONFIGURATION,
                 scheduler: SchedulerOptions = DEFAULT_SCHEDULER_OPTIONS) -> None:
        self.server = APIServer(config)
        self._disable = frozenset(disable)
        self._election = election
        self._settings = settings
        self._scheduler = scheduler
        self._thread = LoopThread("apiserver")
        self._controllers: Part | None = None

    def start(self, *, timeout: float = 120.0) -> APIServer:
        self._thread.start()
        self._thread.run(self.server.start(), timeout=timeout)
        self._controllers = start_parts(self.server, disable=self._disable, election=self._election,
                                        settings=self._settings, scheduler=self._scheduler)
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
                        scheduler: SchedulerOptions = DEFAULT_SCHEDULER_OPTIONS,
                        ready: Callable[[APIServer], None] | None = None,
                        stopping: Callable[[], None] | None = None) -> None:
    """`slimkube server`: the API server, then the scheduler and the controller manager, until SIGINT/SIGTERM;
    then the controllers and the scheduler stop first (their last requests still reach the server), then the
    server. `ready` runs once all serve, `stopping` once a signal has come and before anything stops
    (systemd's READY=1/STOPPING=1)."""
    stop = asyncio.Event()  # armed first: a signal while the parts start stops them once started, not kills
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    server = APIServer(config)
    await server.start()
    # in a thread: the components' certificates may be issued (openssl) while the server answers requests
    manager = await asyncio.to_thread(start_parts, server, disable=disable, election=election, settings=settings,
                                      scheduler=scheduler)
    if ready is not None:
        ready(server)
    try:
        await stop.wait()
    finally:
        if stopping is not None:
            stopping()
        await asyncio.to_thread(manager.stop)
        await server.stop()
