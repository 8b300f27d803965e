"""The kubelet's parts, built and wired in one place: upstream cmd/kubelet/app/server.go RunKubelet and
pkg/kubelet/kubelet.go NewMainKubelet, cut down to what slimkube runs.

`build_parts` constructs every collaborator once, in dependency order, and hands each one exactly what
it needs (a Protocol, a bound method or a closure), so nothing is patched after construction and
nothing is looked up by name later. Between the constructions sits the start-up I/O the later parts
depend on, in upstream's order:

  1. Docker: ping the engine (an engine that cannot be reached is fatal);
  2. register the Node (NodeReporter): an API server that cannot be reached here is fatal;
  3. the pod network: the Node's spec.podCIDR, waited for while the node IPAM controller assigns it, or
     the config's podCIDR, which must match the Node's (nodeagent/podcidr.py); the backend towards other
     nodes' pods set up and published on the Node (nodeagent/network/backends/: the VXLAN device, whose
     MTU the pods then take); IPAM
     under `state_dir`, bridge and host rules ensured, and the addresses of sandboxes that no longer run
     released (restart safety: running sandboxes keep theirs); the hostPort rules re-synced to the
     sandboxes still running (stale KUBE-HP- chains removed);
  4. the serving certificate of the HTTPS API, signed by the cluster CA through the API server
     (nodeagent/servingcert.py), and the TokenReview cache that authenticates bearer tokens (nodeagent/authn.py).

Service environment variables come from a Service informer (all namespaces) beside the pod informer;
until it has listed once, containers wait with upstream's "services have not yet been read" error.

No thread starts here (the caller's event recorder aside): `Kubelet.start` starts the PLEG, the pod
sources, the status loop, the HTTP server and housekeeping in its documented order.

The prober manager (nodeagent/prober/) reads pod statuses from the status manager and wakes the pod
workers when a probe result changes; the pod sync asks it for liveness/startup failures and ready/started.

Two cycles are closed with late-bound closures over locals of `build_parts` (the PLEG wakes the pod
workers, the workers ask the PLEG for a relist), which is construction, not patching: both objects are
complete before either runs.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import docker

from control.api.typed.core import Node
from control.client.events import EventRecorder
from control.client.informer import InformerFactory, SharedInformer
from control.client.paths import resource_path
from control.client.rest import RESTClient
from control.util.iptables import Iptables, detect
from nodeagent import servingcert
from nodeagent.authn import TokenReviewCache
from nodeagent.authz import SubjectAccessReviewCache
from nodeagent.config import KubeletConfig
from nodeagent.gc.containers import ContainerGCPolicy
from nodeagent.gc.images import ImageGCPolicy
from nodeagent.gc.manager import ContainerGC, ImageGCManager, docker_root_usage
from nodeagent.hooks import HookRunner
from nodeagent.images import PAUSE_IMAGE
from nodeagent.logs import log_config
from nodeagent.mirror import MirrorPods, is_mirror
from nodeagent.network import hostport_manager
from nodeagent.network.backends.agent import PodNetworkAgent
from nodeagent.network.backends.desired import Backend
from nodeagent.network.backends.netlink import NetlinkRoutes
from nodeagent.network.cni.default import ensure_default
from nodeagent.network.cni.podnet import CNIPodNetwork
from nodeagent.network.hostport_manager import HostportManager
from nodeagent.network.ipam import LocalIPAM, state_path
from nodeagent.network.manager import NetworkConfig, PodNetworkManager
from nodeagent.network.podnet import NetlinkPodNetwork, PodInterface
from nodeagent.network.sandbox import BuiltinNetwork, CNINetwork, SandboxNetwork
from nodeagent.node_lifecycle import NodeReporter, runtime_facts
from nodeagent.node_status import default_ip
from nodeagent.pleg import GenericPLEG, PodLifecycleEvent
from nodeagent.pod_lifecycle import PodLifecycle
from nodeagent.pod_workers import PodWorkers
from nodeagent.podcidr import PodCIDRError, wait_for_pod_cidr
from nodeagent.prober.manager import ProbeManager
from nodeagent.prober.prober import Prober
from nodeagent.runtime.backoff import Backoff
from nodeagent.runtime.docker import DockerRuntime
from nodeagent.runtime.downward import NodeFacts
from nodeagent.runtime.interface import Runtime, RuntimeFailure
from nodeagent.runtime.pod_files import DNSSettings
from nodeagent.runtime.service_env import ServicesNotSynced, enable_service_links, service_env_map
from nodeagent.runtime.types import SandboxState, SandboxStatus
from nodeagent.runtime_sync import RuntimeSyncer
from nodeagent.server import KubeletServer
from nodeagent.sources import FileSource, URLSource
from nodeagent.stats.kubelet_metrics import KubeletMetrics
from nodeagent.stats.provider import StatsProvider
from nodeagent.status_manager import StatusManager
from nodeagent.streaming import portforward
from nodeagent.volumes.local_path import LocalPathProvisioner
from nodeagent.volumes.tokens import TokenManager

log = logging.getLogger(__name__)
SERVING_CERT_PATH = "/v1-slimkube/serving-kubelet-certificate"  # control/apiserver/authentication/kubeletcerts.py
TOKEN_REVIEWS_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


class KubeletError(RuntimeError):
    """A fatal start-up problem (no API server, no podCIDR, no Docker)."""


class _Objects:
    """ObjectGetter over the REST client: ConfigMaps and Secrets for env and volumes, claims and their
    volumes for `persistentVolumeClaim` volumes."""

    def __init__(self, client: RESTClient) -> None:
        self._client = client

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        return self._client.get(resource_path("v1", "configmaps", namespace=namespace, name=name))

    def get_secret(self, namespace: str, name: str) -> dict[str, Any]:
        return self._client.get(resource_path("v1", "secrets", namespace=namespace, name=name))

    def get_persistent_volume_claim(self, namespace: str, name: str) -> dict[str, Any]:
        return self._client.get(resource_path("v1", "persistentvolumeclaims", namespace=namespace, name=name))

    def get_persistent_volume(self, name: str) -> dict[str, Any]:
        return self._client.get(resource_path("v1", "persistentvolumes", name=name))


class PodIPs:
    """Sandbox id → IP, which the runtime's PodStatus needs (Docker cannot tell: sandboxes run with
    network_mode none). Read by the PLEG on every relist, so kept in memory; filled by TrackedNetwork."""

    def __init__(self) -> None:
        self._ips: dict[str, str] = {}
        self._lock = threading.Lock()

    def set(self, sandbox_id: str, ip: str) -> None:
        with self._lock:
            self._ips[sandbox_id] = ip

    def forget(self, sandbox_id: str) -> None:
        with self._lock:
            self._ips.pop(sandbox_id, None)

    def ip_of(self, sandbox: SandboxStatus) -> str:
        with self._lock:
            return self._ips.get(sandbox.id, "")


class TrackedNetwork:
    """The sandbox network, recording each sandbox's address in `ips` as it attaches and detaches."""

    def __init__(self, manager: SandboxNetwork, ips: PodIPs) -> None:
        self.manager = manager
        self._ips = ips

    def attach(self, sandbox_id: str, pod: Mapping[str, Any], pid_or_netns_path: int | str) -> PodInterface:
        interface = self.manager.attach(sandbox_id, pod, pid_or_netns_path)
        self._ips.set(sandbox_id, interface.ip)
        return interface

    def detach(self, sandbox_id: str) -> str | None:
        released = self.manager.detach(sandbox_id)
        self._ips.forget(sandbox_id)
        return released


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


def _mirror_key(pod: Mapping[str, Any]) -> tuple[str, str]:
    meta = _meta(pod)
    return (meta.get("namespace") or "default", meta.get("name", ""))


class PodSources:
    """The pods this node runs, merged from the API server's informer and the static file/URL sources
    (upstream pkg/kubelet/config PodConfig), handed to the pod workers; mirror pods from the API are kept
    apart (they stand for static pods, whose status goes to them) and kept in step by `sync_mirrors`."""

    def __init__(self, config: KubeletConfig, client: RESTClient, workers: PodWorkers) -> None:
        self._workers = workers
        self._lock = threading.Lock()
        self._mirrors: dict[tuple[str, str], dict[str, Any]] = {}  # (ns, name) → mirror pod from the API
        self._static: dict[str, dict[str, Any]] = {}  # uid → static pod
        self._api_uids: set[str] = set()
        self.mirror_pods = MirrorPods(client, config.node_name)
        self.factory = InformerFactory(client)
        self.informer: SharedInformer = self.factory.informer(
            "v1", "pods", field_selector=f"spec.nodeName={config.node_name}")
        self.informer.add_event_handler(on_add=self.on_pod, on_update=lambda old, new: self.on_pod(new),
                                        on_delete=self.on_pod_delete)
        self.services: SharedInformer = self.factory.informer("v1", "services")
        self.static_sources: list[FileSource | URLSource] = []
        if config.static_pod_path:
            self.static_sources.append(FileSource(config.static_pod_path, config.file_check_frequency,
                                                  self.on_static, config.node_name))
        if config.static_pod_url:
            self.static_sources.append(URLSource(config.static_pod_url, config.http_check_frequency,
                                                 self.on_static, config.node_name))

    def start(self, stop: threading.Event) -> None:
        self.factory.start(stop)
        for source in self.static_sources:
            source.start()

    def stop(self) -> None:
        for source in self.static_sources:
            source.stop()

    def on_pod(self, pod: dict[str, Any]) -> None:
        if is_mirror(pod):
            with self._lock:
                self._mirrors[_mirror_key(pod)] = pod
            return
        uid = _meta(pod).get("uid", "")
        with self._lock:
            self._api_uids.add(uid)
        self._workers.update(uid, pod)

    def on_pod_delete(self, pod: dict[str, Any]) -> None:
        if is_mirror(pod):
            with self._lock:
                self._mirrors.pop(_mirror_key(pod), None)
            return
        uid = _meta(pod).get("uid", "")
        with self._lock:
            self._api_uids.discard(uid)
        self._workers.gone(uid)

    def on_static(self, pods: list[dict[str, Any]]) -> None:
        current = {_meta(p)["uid"]: p for p in pods}
        with self._lock:
            removed = set(self._static) - set(current)
            self._static = current
        for uid, pod in current.items():
            self._workers.update(uid, pod)
        for uid in removed:
            self._workers.gone(uid)
        self.sync_mirrors()

    def sync_mirrors(self) -> None:
        with self._lock:
            static = list(self._static.values())
        try:
            self.mirror_pods.sync(static)
        except Exception as exc:  # noqa: BLE001 - the API server may be away; the next housekeeping retries
            log.warning("mirror pod sync failed: %s", exc)

    def service_env(self, pod: Mapping[str, Any]) -> dict[str, str]:
        """The pod's Service variables (upstream getServiceEnvVarMap over the kubelet's service lister)."""
        if not self.services.has_synced():
            raise ServicesNotSynced()
        namespace = _meta(pod).get("namespace") or "default"
        return service_env_map(self.services.lister().list(), namespace, enable_service_links(pod))

    def mirror_of(self, pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
        with self._lock:
            return self._mirrors.get(_mirror_key(pod))

    def wanted(self) -> set[str] | None:
        """The uids some source has, or None until the API's pods have been listed once."""
        if not self.informer.has_synced():
            return None
        with self._lock:
            return self._api_uids | set(self._static)


@dataclass(frozen=True)
class KubeletParts:
    """Everything a started kubelet runs with, each built once by `build_parts`."""

    runtime: Runtime
    reporter: NodeReporter
    network: TrackedNetwork
    hostports: HostportManager
    syncer: RuntimeSyncer
    status: StatusManager
    probes: ProbeManager
    pleg: GenericPLEG
    workers: PodWorkers
    sources: PodSources
    server: KubeletServer
    pod_cidr: str
    pod_routes: PodNetworkAgent  # routes / VXLAN entries towards other nodes' pods
    container_gc: ContainerGC
    image_gc: ImageGCManager | None  # None: imageGCHighThresholdPercent 100 turns it off (upstream)
    local_path: LocalPathProvisioner  # this node's share of the built-in local-path provisioner


def connect_docker(config: KubeletConfig) -> docker.APIClient:
    try:
        api = docker.APIClient(version="auto", timeout=max(60, int(config.image_pull_timeout)))
        api.ping()
    except Exception as exc:
        raise KubeletError(f"cannot reach dockerd: {exc}") from exc
    return api


def build_parts(config: KubeletConfig, client: RESTClient, *, recorder: EventRecorder,
                health: Callable[[], list[str]], extra_labels: Mapping[str, str],
                stop: threading.Event | None = None) -> KubeletParts:
    """Build the kubelet's parts with the start-up I/O between them (see the module notes). `health` is
    the kubelet's own check (the node status and /healthz report it); `stop` ends the wait for a podCIDR;
    raises KubeletError."""
    pod_ips = PodIPs()
    runtime = DockerRuntime(connect_docker(config), node_name=config.node_name, pod_ip=pod_ips.ip_of,
                            log_config=log_config(config.container_log_max_size, config.container_log_max_files))

    reporter = NodeReporter(client, config, facts=runtime_facts(config, runtime, runtime.image_fs_path), health=health)
    try:
        node = reporter.register()
    except Exception as exc:
        raise KubeletError(f"registering node {config.node_name} failed: {exc}") from exc
    try:
        pod_cidr = wait_for_pod_cidr(lambda: client.get(resource_path("v1", "nodes", name=config.node_name)), node,
                                     configured=config.pod_cidr, node_name=config.node_name, stop=stop)
    except PodCIDRError as exc:
        raise KubeletError(str(exc)) from None
    node_ip = config.node_ip or default_ip()
    allocatable = dict(Node(node).status.allocatable)
    node_facts = NodeFacts(host_ips=(node_ip,), allocatable=allocatable)

    pod_routes = PodNetworkAgent(client, NetlinkRoutes(), node_name=config.node_name,
                                 backend=Backend(config.pod_network), node_ip=node_ip, pod_cidr=pod_cidr,
                                 device=config.vxlan_device)
    try:
        pod_routes.setup()
    except Exception as exc:
        raise KubeletError(f"pod network {config.pod_network}: {exc}") from exc
    network_config = config.network(pod_cidr)
    if pod_routes.pod_mtu is not None:  # pods' packets must fit the VXLAN device
        network_config = dataclasses.replace(network_config, mtu=pod_routes.pod_mtu)

    os.makedirs(config.state_dir, exist_ok=True)
    iptables = detect()
    sandbox_network = _sandbox_network(config, network_config, iptables, runtime)
    live_sandboxes = [s.id for pod in runtime.list_pods() for s in pod.sandboxes if s.state is SandboxState.READY]
    for owner, ip in sandbox_network.start(live_sandboxes).items():
        pod_ips.set(owner, ip)
    hostports = HostportManager(iptables, hostport_manager.state_path(config.state_dir))
    hostports.start(live_sandboxes)
    network = TrackedNetwork(sandbox_network, pod_ips)

    backoff = Backoff(initial=config.crash_loop_backoff_initial, maximum=config.crash_loop_backoff_max)
    account_tokens = TokenManager(lambda namespace, name, body: client.create(
        resource_path("v1", "serviceaccounts", namespace=namespace, name=name) + "/token", body))
    syncer = RuntimeSyncer(runtime, network, _Objects(client), pods_dir=config.pods_dir, recorder=recorder,
                       hooks=HookRunner(runtime), backoff=backoff, node_facts=lambda: node_facts,
                       extra_labels=extra_labels,
                       hostports=hostports if config.network_plugin == "builtin" else None,  # cni: portmap
                       service_env=lambda pod: sources.service_env(pod),
                       dns=DNSSettings(cluster_dns=config.cluster_dns, cluster_domain=config.cluster_domain,
                                       resolv_conf=config.resolv_conf),
                       tokens=account_tokens)
    workers: PodWorkers  # bound below; the PLEG's events reach the workers only once it is started

    def wake(uid: str, events: tuple[PodLifecycleEvent, ...]) -> None:
        workers.wake(uid)

    metrics = KubeletMetrics(runtime.list_pods)
    pleg = GenericPLEG(runtime, on_events=wake, period=config.pleg_relist_period,
                       threshold=config.pleg_relist_threshold, on_relist=metrics.pleg_relist_duration.observe)
    sources: PodSources  # bound below, before anything reads a status
    status = StatusManager(client, host_ip=node_ip, mirror_of=lambda pod: sources.mirror_of(pod))
    # A probe result that changes wakes its pod's worker (upstream syncLoop on the results' updates).
    probes = ProbeManager(Prober(runtime, recorder=recorder), status_of=status.get,
                          on_update=lambda uid: workers.wake(uid))
    lifecycle = PodLifecycle(pleg.cache, syncer, status, relist_period=config.pleg_relist_period, probes=probes)
    workers = PodWorkers(lifecycle.sync, resync_period=config.sync_frequency, request_relist=pleg.request_relist)
    sources = PodSources(config, client, workers)

    def find_container(namespace: str, name: str, container: str) -> str | None:
        for pod in workers.pods():
            meta = _meta(pod)
            if (meta.get("namespace") or "default") == namespace and meta.get("name") == name:
                latest = pleg.cache.get(meta.get("uid", "")).latest(container)
                return latest.id if latest is not None else None
        return None

    try:
        tls = servingcert.ensure(config.state_dir, config.node_name, addresses=(node_ip, config.address),
                                 hostnames=servingcert.host_names(), ca_file=client.config.ca_file,
                                 sign=lambda body: client.create(SERVING_CERT_PATH, body)["certificate"])
    except Exception as exc:
        raise KubeletError(f"getting the kubelet's serving certificate failed: {exc}") from exc
    if config.address not in ("0.0.0.0", "::", node_ip):
        log.warning("the kubelet API listens on %s but the node reports InternalIP %s: the API server dials "
                    "that address and will not reach this kubelet", config.address, node_ip)
    tokens = TokenReviewCache(lambda token: client.create(TOKEN_REVIEWS_PATH, {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}))
    access = SubjectAccessReviewCache(lambda spec: client.create(SUBJECT_ACCESS_REVIEWS_PATH, {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}), node=config.node_name)
    server = KubeletServer(config.address, config.port, tls=tls, authenticate_token=tokens.authenticate,
                           authorize=access.allowed,
                           pods=lambda: [dict(p) for p in workers.pods()],
                           runtime=runtime, health=health, find_container=find_container, pod_status=status.get,
                           node_name=config.node_name, fs_path=config.data_dir, streams=runtime,
                           open_port=functools.partial(portforward.connect_in_pod, runtime), metrics=metrics,
                           stats=StatsProvider(runtime, node_name=config.node_name, fs_path=config.data_dir,
                                               pods_dir=config.pods_dir, image_fs_path=runtime.image_fs_path))
    container_gc, image_gc = _garbage_collectors(config, runtime, recorder, sources, workers)
    local_path = LocalPathProvisioner(client, sources.factory, node_name=config.node_name,
                                      base_dir=config.local_path_dir, recorder=recorder)
    return KubeletParts(runtime=runtime, reporter=reporter, network=network, hostports=hostports, syncer=syncer,
                        status=status, probes=probes, pleg=pleg, workers=workers, sources=sources, server=server,
                        pod_cidr=pod_cidr, pod_routes=pod_routes, container_gc=container_gc, image_gc=image_gc,
                        local_path=local_path)


def _sandbox_network(config: KubeletConfig, network_config: NetworkConfig, iptables: Iptables,
                     runtime: DockerRuntime) -> SandboxNetwork:
    """The pods' interfaces per --network-plugin: the built-in bridge + IPAM under `state_dir`, or CNI with
    the default configuration list written first when the directory has none."""
    if config.network_plugin == "builtin":
        ipam = LocalIPAM(state_path(config.state_dir), network_config.pod_cidr)
        return BuiltinNetwork(PodNetworkManager(network_config, ipam=ipam, network=NetlinkPodNetwork(),
                                                iptables=iptables), ipam)
    try:
        written = ensure_default(config.cni_conf_dir, pod_cidr=network_config.pod_cidr, bridge=network_config.bridge,
                                 mtu=network_config.mtu, ipam_dir=f"{config.cni_dir}/networks")
    except OSError as exc:
        raise KubeletError(f"writing the default CNI configuration into {config.cni_conf_dir}: {exc}") from exc
    if written is not None:
        log.info("wrote the default CNI configuration %s (bridge %s, host-local %s)", written, network_config.bridge,
                 network_config.pod_cidr)

    def netns_of(sandbox_id: str) -> str:
        try:
            pid = runtime.sandbox_pid(sandbox_id)
        except RuntimeFailure:
            return ""
        return f"/proc/{pid}/ns/net" if pid > 0 else ""

    cni = CNIPodNetwork(conf_dir=config.cni_conf_dir, bin_dirs=config.cni_bin_dir.split(","),
                        cache_dir=config.cni_dir, netns_of=netns_of)
    return CNINetwork(cni, iptables=iptables, host_rules=network_config.rules)


def node_reference(node_name: str) -> dict[str, str]:
    """The Node as the kubelet's events name it (upstream nodeRef: the uid is the node name)."""
    return {"kind": "Node", "name": node_name, "uid": node_name, "apiVersion": "v1"}


def _garbage_collectors(config: KubeletConfig, runtime: DockerRuntime, recorder: EventRecorder,
                        sources: PodSources, workers: PodWorkers) -> tuple[ContainerGC, ImageGCManager | None]:
    """The container GC, which counts a pod as deleted once every source has listed and neither a source
    nor a pod worker has it; and the image GC on Docker's data root, the pause image pinned."""

    def known_pods() -> frozenset[str] | None:
        wanted = sources.wanted()
        return None if wanted is None else frozenset(wanted | workers.uids())

    container_gc = ContainerGC(runtime, ContainerGCPolicy(
        min_age=config.minimum_container_ttl_duration,
        max_per_pod_container=config.maximum_dead_containers_per_container,
        max_containers=config.maximum_dead_containers), known_pods=known_pods)
    if config.image_gc_high_threshold_percent >= 100:
        return container_gc, None
    image_gc = ImageGCManager(runtime, docker_root_usage(runtime.image_fs_path), ImageGCPolicy(
        high_threshold_percent=config.image_gc_high_threshold_percent,
        low_threshold_percent=config.image_gc_low_threshold_percent,
        min_age=config.image_minimum_gc_age), recorder=recorder, node_ref=node_reference(config.node_name),
        pinned=(PAUSE_IMAGE,))
    return container_gc, image_gc
