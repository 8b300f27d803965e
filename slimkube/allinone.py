"""`slimkube up` and `slimkube agent`: start the pieces in order, print progress, stop in reverse order
(k3s pkg/cli/server + pkg/agent: the server's readiness gates the agent; the agent joins with the node
token the server just wrote).

`up`, in one process:
1. take `DIR/node.lock` (slimkube/nodelock.py) so `down` and a second `up` refuse while this runs;
2. the control plane (controlplane.py): the API server on its own asyncio loop thread, on 0.0.0.0:6443
   unless told otherwise (it writes DIR/admin.kubeconfig and DIR/node-token), then the scheduler and
   the controller manager (all but `--disable`);
3. a kubelet joining it exactly as `slimkube agent` would (nodeagent/bootstrap.py with the node token
   and the server's CA file), node name = hostname, podCIDR = the cluster CIDR's first /24;
4. once the node is registered, the kube-proxy (proxy/app.py) as `system:kube-proxy` (its own client
   certificate and DIR/kube-proxy.kubeconfig, slimkube/componentcreds.py), this node's name and the cluster
   CIDR, so the Node's InternalIP is known to it;
5. wait for the node to report Ready, then print the kubeconfig path;
6. on SIGINT/SIGTERM: kubelet.stop() (pods keep running; the next `up` adopts them), then the proxy (its
   rules stay, so Services keep answering; the next `up` re-syncs them), then the server.

With `--nodes N`, nodes 2..N (slimkube/nodeprocs.py) are started right after the API server, each
joining it as a worker host's agent would, and stopped first; `up` says it is ready once all are.

A failure at any step stops what was started and raises `NodeError` (exit 1).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from typing import Protocol

from control.apiserver.server import APIServer, ServerConfig
from control.client.kubeconfig import ClientConfig
from control.controllers.manager import DEFAULT_CONFIGURATION, ControllerManagerConfiguration
from slimkube.controlplane import DEFAULT_SCHEDULER_OPTIONS, BackgroundServer, SchedulerOptions
from slimkube.stopsignal import StopOnSignal

PROGRESS_SECONDS = 10.0
Say = Callable[[str], None]


class NodeError(RuntimeError):
    """Start-up failed; the message says which step."""


class KubeletLike(Protocol):
    @property
    def node_name(self) -> str: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def is_ready(self) -> bool: ...


class ProxyLike(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


class NodeGroupLike(Protocol):
    """Nodes 2..N of `up --nodes N` (slimkube/nodeprocs.py NodeGroup)."""

    def start(self) -> None: ...

    def wait_ready(self, stop: threading.Event) -> bool: ...

    def stop(self) -> None: ...


def run_kubelet(kubelet: KubeletLike, stop: threading.Event, *, say: Say,
                on_ready: Callable[[], None] | None = None, on_registered: Callable[[], None] | None = None,
                on_stopping: Callable[[], None] | None = None, tag: str = "agent") -> None:
    """Start the kubelet, report its way to Ready, run until `stop` is set, then stop it (pods stay).
    `on_registered` runs once the Node exists; if it raises, the kubelet is stopped and the error raised.
    `on_stopping` runs before the kubelet stops (systemd's STOPPING=1)."""
    say(f"[{tag}] starting kubelet for node {kubelet.node_name}")
    try:
        kubelet.start()
    except Exception as exc:
        try:
            kubelet.stop()  # whatever part of it did start
        except Exception:  # noqa: BLE001 - the start-up error is the one to report
            pass
        raise NodeError(f"the kubelet did not start: {exc}") from exc
    say(f"[{tag}] node {kubelet.node_name} registered")
    try:
        if on_registered is not None:
            on_registered()
        started = time.monotonic()
        last_word = started
        while not stop.is_set() and not kubelet.is_ready():
            if time.monotonic() - last_word >= PROGRESS_SECONDS:
                last_word = time.monotonic()
                say(f"[{tag}] waiting for node {kubelet.node_name} to be Ready ({last_word - started:.0f} s)")
            stop.wait(0.2)
        if not stop.is_set():
            say(f"[{tag}] node {kubelet.node_name} Ready")
            if on_ready is not None:
                on_ready()
        stop.wait()
    finally:
        say(f"[{tag}] stopping kubelet (pods keep running)")
        if on_stopping is not None:
            on_stopping()
        kubelet.stop()


def run_up(server_config: ServerConfig, make_kubelet: Callable[[ClientConfig], KubeletLike], *,
           join: Callable[[APIServer], ClientConfig], signals: StopOnSignal, say: Say,
           make_proxy: Callable[[APIServer], ProxyLike] | None = None,
           make_nodes: Callable[[APIServer], NodeGroupLike] | None = None,
           disable: Collection[str] = (),
           settings: ControllerManagerConfiguration = DEFAULT_CONFIGURATION,
           scheduler: SchedulerOptions = DEFAULT_SCHEDULER_OPTIONS) -> None:
    """Steps 2-5 of the module notes (the caller holds the lock and installed `signals`)."""
    background = BackgroundServer(server_config, disable=disable, settings=settings, scheduler=scheduler)
    try:
        try:
            api = background.start()
        except Exception as exc:
            raise NodeError(f"the API server did not start: {exc}") from exc
        say(f"[up] API server ready at {api.url}")
        if signals.event.is_set():
            return
        client_config = join(api)
        kubelet = make_kubelet(client_config)
        proxies: list[ProxyLike] = []  # the started one, for the stop path
        nodes = make_nodes(api) if make_nodes is not None else None
        if nodes is not None:
            try:
                nodes.start()
            except OSError as exc:  # a node process could not be started (no `ip`, a full disk)
                nodes.stop()
                raise NodeError(f"the nodes' processes did not start: {exc}") from exc

        def registered() -> None:
            if make_proxy is None:
                return
            say("[up] starting kube-proxy")
            proxy = make_proxy(api)
            try:
                proxy.start()
            except Exception as exc:
                raise NodeError(f"the kube-proxy did not start: {exc}") from exc
            proxies.append(proxy)
            say("[up] kube-proxy running")

        def ready() -> None:
            say(f"[up] kubeconfig: {api.kubeconfig_path}")
            if nodes is not None and not nodes.wait_ready(signals.event):
                return
            say(f"[up] ready: export KUBECONFIG={api.kubeconfig_path}; Ctrl-C stops (pods keep running)")

        try:
            run_kubelet(kubelet, signals.event, say=say, on_ready=ready, on_registered=registered, tag="up",
                        on_stopping=nodes.stop if nodes is not None else None)
        finally:
            if nodes is not None:
                nodes.stop()  # again if the kubelet failed before its stop path: a no-op otherwise
            for proxy in proxies:
                say("[up] stopping kube-proxy (its rules stay)")
                proxy.stop()
    finally:
        say("[up] stopping API server")
        background.stop()
        say("[up] stopped")

