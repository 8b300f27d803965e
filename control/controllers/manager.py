"""The controller manager: the control loops `slimkube server` runs against its own API server.

Upstream: cmd/kube-controller-manager/app/controllermanager.go (`NewControllerDescriptors`: a table of
controller name → init function; `StartControllers` calls each enabled init with a shared
`ControllerContext` holding the client and one SharedInformerFactory, and only *then* starts the
factory, so every informer a controller asked for shares one watch; `--controllers` enables or disables
them by name) and k3s pkg/daemons/control (controllers started once the API server is ready, each
switchable off with `--disable`).

`CONTROLLERS` maps upstream's controller names (the `--controllers` aliases upstream still accepts:
"endpoint", "nodeipam", "nodelifecycle", "taint-eviction-controller", "garbagecollector", "podgc", "namespace",
"serviceaccount", "serviceaccount-token", "root-ca-cert-publisher", "resourcequota", "disruption", "replicaset",
"replicationcontroller", "deployment", "daemonset", "horizontalpodautoscaling", "job", "cronjob",
"ttl-after-finished", "endpointslice", "endpointslicemirroring", "service-lb-controller", "statefulset",
"persistentvolume-binder", …) to an init function: it builds the controller against the context (registering
its informer handlers) and returns the loop to run, `run(stop)`, which the manager runs on its own thread. A
later controller is one package under control/controllers/ (a `Controller` of shared/base.py) and one line
in this table.

Settings the controllers take from the command line (upstream KubeControllerManagerConfiguration, e.g.
--node-monitor-grace-period, --resource-quota-sync-period) travel in `ControllerManagerConfiguration`, in the context.

Credentials (upstream `--use-service-account-credentials` and its ControllerClientBuilder): the shared
informers and the manager's own requests use the manager's credential (upstream's
`system:kube-controller-manager`, which may list and watch everything); with `controller_credentials`,
each controller writes through a client of its own, as the user `CONTROLLER_ACCOUNTS` names (the service
account its `system:controller:*` binding names), so each has only its role's rights.

Lifecycle: `start()` inits every enabled controller, starts the informers, then one thread per controller;
`stop()` sets the one stop Event (informers end their watches, `run_workers` shuts each queue down and
waits for the item in hand) and joins the threads, then closes the client.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from control.client.informer import InformerFactory
from control.client.kubeconfig import ClientConfig
from control.client.rest import RESTClient
from control.controllers.certificates.approver import CSRApprovingController
from control.controllers.certificates.authority import Authority
from control.controllers.certificates.signer import CSRSigningController
from control.controllers.clusterroleaggregation.controller import ClusterRoleAggregationController
from control.controllers.cronjob.controller import CronJobController
from control.controllers.daemonset.controller import DaemonSetController
from control.controllers.deployment.controller import DeploymentController
from control.controllers.disruption.controller import DisruptionController
from control.controllers.endpoints.controller import EndpointsController
from control.controllers.endpointslice.controller import EndpointSliceController
from control.controllers.endpointslicemirroring.controller import EndpointSliceMirroringController
from control.controllers.garbagecollector.controller import GarbageCollector
from control.controllers.horizontal.controller import SYNC_PERIOD as HPA_SYNC_PERIOD
from control.controllers.horizontal.controller import HorizontalController
from control.controllers.job.controller import JobController
from control.controllers.job.decisions import DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_CAP
from control.controllers.namespace.controller import NamespaceController
from control.controllers.nodeipam.controller import (
    DEFAULT_CLUSTER_CIDR,
    DEFAULT_NODE_CIDR_MASK_SIZE,
    NodeIPAMController,
)
from control.controllers.nodelifecycle.controller import (
    NODE_MONITOR_GRACE_PERIOD,
    NODE_MONITOR_PERIOD,
    NODE_STARTUP_GRACE_PERIOD,
    NodeLifecycleController,
)
from control.controllers.nodelifecycle.zones import EvictionPolicy
from control.controllers.persistentvolume.controller import PersistentVolumeController
from control.controllers.podgc.controller import PodGCController
from control.controllers.podgc.selection import TERMINATED_POD_GC_THRESHOLD
from control.controllers.replicaset.controller import REPLICATION_CONTROLLER, ReplicaSetController
from control.controllers.resourcequota.controller import RESYNC_PERIOD, ResourceQuotaController
from control.controllers.rootcacertpublisher.controller import RootCACertPublisher
from control.controllers.serviceaccounts.controller import ServiceAccountsController
from control.controllers.serviceaccounts.tokens import TokensController
from control.controllers.servicelb.controller import ServiceLBController
from control.controllers.shared.discovery import ServerDiscovery
from control.controllers.shared.endpointslice_reconciler import MAX_ENDPOINTS_PER_SLICE
from control.controllers.statefulset.controller import StatefulSetController
from control.controllers.tainteviction.controller import TaintEvictionController
from control.controllers.ttlafterfinished.controller import TTLAfterFinishedController
from control.util import satoken

log = logging.getLogger(__name__)

Run = Callable[[threading.Event], None]


@dataclass(frozen=True)
class ControllerManagerConfiguration:
    """The controllers' settings, in seconds, upstream's defaults (KubeControllerManagerConfiguration)."""

    node_monitor_period: float = NODE_MONITOR_PERIOD
    node_monitor_grace_period: float = NODE_MONITOR_GRACE_PERIOD
    node_startup_grace_period: float = NODE_STARTUP_GRACE_PERIOD
    # --node-eviction-rate, --secondary-node-eviction-rate, --unhealthy-zone-threshold, --large-cluster-size-threshold
    node_eviction: EvictionPolicy = EvictionPolicy()
    terminated_pod_gc_threshold: int = TERMINATED_POD_GC_THRESHOLD  # 0: terminated pods are never collected
    # The cluster CA (PEM) the root CA publisher puts in every namespace (upstream --root-ca-file); empty:
    # the CA file the controller manager's own client trusts, as upstream falls back to its client's CAData.
    root_ca_pem: str = ""
    # The key legacy service account token Secrets are signed with (upstream --service-account-private-key-file,
    # the API server's signing key); empty: the serviceaccount-token controller does not run.
    service_account_private_key_file: str = ""
    # The CA the csrsigning controller issues from (upstream --cluster-signing-cert-file/--cluster-signing-key-file);
    # empty: no signing (a server without TLS has no CA).
    cluster_signing_cert_file: str = ""
    cluster_signing_key_file: str = ""
    resource_quota_sync_period: float = RESYNC_PERIOD
    max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE  # upstream --max-endpoints-per-slice
    # The service-lb-controller's addresses, one per LoadBalancer Service; empty: the Ready nodes' addresses.
    loadbalancer_address_pool: tuple[str, ...] = ()
    # The Job controller's back-off of failed pods: base doubling up to the cap (upstream's constants
    # DefaultJobPodFailureBackOff/MaxJobPodFailureBackOff, which have no flag; settable here for tests).
    horizontal_pod_autoscaler_sync_period: float = HPA_SYNC_PERIOD  # --horizontal-pod-autoscaler-sync-period
    job_pod_failure_backoff: float = DEFAULT_BACKOFF_BASE
    job_pod_failure_backoff_max: float = DEFAULT_BACKOFF_CAP
    # Node IPAM (upstream --cluster-cidr, --node-cidr-mask-size, --service-cluster-ip-range): each Node's
    # podCIDR is carved out of cluster_cidr, never out of the service CIDR.
    cluster_cidr: str = DEFAULT_CLUSTER_CIDR
    node_cidr_mask_size: int = DEFAULT_NODE_CIDR_MASK_SIZE
    service_cidr: str = "10.96.0.0/12"


DEFAULT_CONFIGURATION = ControllerManagerConfiguration()


@dataclass(frozen=True)
class ControllerContext:
    """What every controller's init gets (upstream ControllerContext)."""

    client: RESTClient
    informers: InformerFactory
    config: ControllerManagerConfiguration = DEFAULT_CONFIGURATION
    client_config: ClientConfig | None = None


def _start_endpoint(ctx: ControllerContext) -> Run:
    return EndpointsController(ctx.client, ctx.informers).run


def _start_endpointslice(ctx: ControllerContext) -> Run:
    return EndpointSliceController(ctx.client, ctx.informers,
                                   max_endpoints_per_slice=ctx.config.max_endpoints_per_slice).run


def _start_endpointslice_mirroring(ctx: ControllerContext) -> Run:
    return EndpointSliceMirroringController(ctx.client, ctx.informers).run


def _start_service_lb(ctx: ControllerContext) -> Run:
    return ServiceLBController(ctx.client, ctx.informers, pool=ctx.config.loadbalancer_address_pool).run


def _start_node_lifecycle(ctx: ControllerContext) -> Run:
    return NodeLifecycleController(ctx.client, ctx.informers, monitor_period=ctx.config.node_monitor_period,
                                   grace_period=ctx.config.node_monitor_grace_period,
                                   startup_grace_period=ctx.config.node_startup_grace_period,
                                   eviction=ctx.config.node_eviction).run


def _start_node_ipam(ctx: ControllerContext) -> Run:
    return NodeIPAMController(ctx.client, ctx.informers, cluster_cidr=ctx.config.cluster_cidr,
                              node_mask_size=ctx.config.node_cidr_mask_size,
                              service_cidr=ctx.config.service_cidr).run


def _start_taint_eviction(ctx: ControllerContext) -> Run:
    return TaintEvictionController(ctx.client, ctx.informers).run


def _start_garbage_collector(ctx: ControllerContext) -> Run:
    return GarbageCollector(ctx.client, ctx.informers, ServerDiscovery(ctx.client)).run


def _start_pod_gc(ctx: ControllerContext) -> Run:
    return PodGCController(ctx.client, ctx.informers,
                           terminated_pod_gc_threshold=ctx.config.terminated_pod_gc_threshold).run


def _start_namespace(ctx: ControllerContext) -> Run:
    return NamespaceController(ctx.client, ctx.informers, ServerDiscovery(ctx.client)).run


def _start_service_account(ctx: ControllerContext) -> Run:
    return ServiceAccountsController(ctx.client, ctx.informers).run


def _root_ca(ctx: ControllerContext) -> str:
    """The cluster CA the configuration names, else the one the manager's own client trusts."""
    ca_file = ctx.client_config.ca_file if ctx.client_config else None
    if not ctx.config.root_ca_pem and ca_file:
        with open(ca_file, encoding="utf-8") as handle:
            return handle.read()
    return ctx.config.root_ca_pem


def _start_service_account_token(ctx: ControllerContext) -> Run:
    if not ctx.config.service_account_private_key_file:
        log.warning("serviceaccount-token: no --service-account-private-key-file: legacy token Secrets stay empty")
        return lambda stop: None
    key = satoken.load_key(ctx.config.service_account_private_key_file)
    return TokensController(ctx.client, ctx.informers, key=key, root_ca=_root_ca(ctx)).run


def _start_root_ca_cert_publisher(ctx: ControllerContext) -> Run:
    root_ca = _root_ca(ctx)
    if not root_ca:
        log.warning("root-ca-cert-publisher: no cluster CA (a server without TLS): nothing to publish")
        return lambda stop: None
    return RootCACertPublisher(ctx.client, ctx.informers, root_ca=root_ca).run


def _start_csr_signing(ctx: ControllerContext) -> Run:
    cert, key = ctx.config.cluster_signing_cert_file, ctx.config.cluster_signing_key_file
    if not (cert and key):
        log.warning("csrsigning: no cluster signing CA (a server without TLS): no certificate is issued")
        return lambda stop: None
    return CSRSigningController(ctx.client, ctx.informers, authority=Authority(cert, key)).run


def _start_csr_approving(ctx: ControllerContext) -> Run:
    return CSRApprovingController(ctx.client, ctx.informers).run


def _start_clusterrole_aggregation(ctx: ControllerContext) -> Run:
    return ClusterRoleAggregationController(ctx.client, ctx.informers).run


def _start_resource_quota(ctx: ControllerContext) -> Run:
    return ResourceQuotaController(ctx.client, ctx.informers, resync_period=ctx.config.resource_quota_sync_period).run


def _start_disruption(ctx: ControllerContext) -> Run:
    return DisruptionController(ctx.client, ctx.informers).run


def _start_statefulset(ctx: ControllerContext) -> Run:
    return StatefulSetController(ctx.client, ctx.informers).run


def _start_persistent_volume_binder(ctx: ControllerContext) -> Run:
    return PersistentVolumeController(ctx.client, ctx.informers).run


def _start_replica_set(ctx: ControllerContext) -> Run:
    return ReplicaSetController(ctx.client, ctx.informers).run


def _start_replication_controller(ctx: ControllerContext) -> Run:
    return ReplicaSetController(ctx.client, ctx.informers, kind=REPLICATION_CONTROLLER).run


def _start_deployment(ctx: ControllerContext) -> Run:
    return DeploymentController(ctx.client, ctx.informers).run


def _start_horizontal_pod_autoscaling(ctx: ControllerContext) -> Run:
    return HorizontalController(ctx.client, ctx.informers,
                                sync_period=ctx.config.horizontal_pod_autoscaler_sync_period).run


def _start_daemonset(ctx: ControllerContext) -> Run:
    return DaemonSetController(ctx.client, ctx.informers).run


def _start_job(ctx: ControllerContext) -> Run:
    return JobController(ctx.client, ctx.informers, backoff_base=ctx.config.job_pod_failure_backoff,
                         backoff_cap=ctx.config.job_pod_failure_backoff_max).run


def _start_cronjob(ctx: ControllerContext) -> Run:
    return CronJobController(ctx.client, ctx.informers).run


def _start_ttl_after_finished(ctx: ControllerContext) -> Run:
    return TTLAfterFinishedController(ctx.client, ctx.informers).run


# Upstream's service account of each controller (cmd/kube-controller-manager: the name each init passes to
# ClientBuilder.ClientOrDie): kube-system/<account>, bound to system:controller:<account> by the bootstrap policy.
CONTROLLER_ACCOUNTS: Mapping[str, str] = {
    "endpoint": "endpoint-controller",
    "endpointslice": "endpointslice-controller",
    "endpointslicemirroring": "endpointslicemirroring-controller",
    "nodelifecycle": "node-controller",
    "nodeipam": "node-controller",
    "taint-eviction-controller": "taint-eviction-controller",
    "garbagecollector": "generic-garbage-collector",
    "podgc": "pod-garbage-collector",
    "namespace": "namespace-controller",
    "serviceaccount": "service-account-controller",
    "root-ca-cert-publisher": "root-ca-cert-publisher",
    "clusterrole-aggregation": "clusterrole-aggregation-controller",
    "resourcequota": "resourcequota-controller",
    "disruption": "disruption-controller",
    "replicaset": "replicaset-controller",
    "replicationcontroller": "replication-controller",
    "deployment": "deployment-controller",
    "daemonset": "daemon-set-controller",
    "horizontalpodautoscaling": "horizontal-pod-autoscaler",
    "job": "job-controller",
    "cronjob": "cronjob-controller",
    "ttl-after-finished": "ttl-after-finished-controller",
    "service-lb-controller": "service-controller",
    "statefulset": "statefulset-controller",
    "persistentvolume-binder": "persistent-volume-binder",
    "csrsigning": "certificate-controller",
    "csrapproving": "certificate-controller",
}
# Controllers that write with the manager's own credential, as upstream starts them with its root client
# builder: the tokens controller (upstream's "tokens-controller") fills the very token Secrets service
# accounts would authenticate with, so it cannot depend on one.
ROOT_CREDENTIAL_CONTROLLERS = frozenset({"serviceaccount-token"})

CONTROLLERS: Mapping[str, Callable[[ControllerContext], Run]] = {
    "endpoint": _start_endpoint,
    "endpointslice": _start_endpointslice,
    "endpointslicemirroring": _start_endpointslice_mirroring,
    "nodelifecycle": _start_node_lifecycle,
    "nodeipam": _start_node_ipam,
    "taint-eviction-controller": _start_taint_eviction,
    "garbagecollector": _start_garbage_collector,
    "podgc": _start_pod_gc,
    "namespace": _start_namespace,
    "serviceaccount": _start_service_account,
    "serviceaccount-token": _start_service_account_token,
    "root-ca-cert-publisher": _start_root_ca_cert_publisher,
    "csrsigning": _start_csr_signing,
    "csrapproving": _start_csr_approving,
    "clusterrole-aggregation": _start_clusterrole_aggregation,
    "resourcequota": _start_resource_quota,
    "disruption": _start_disruption,
    "replicaset": _start_replica_set,
    "replicationcontroller": _start_replication_controller,
    "deployment": _start_deployment,
    "daemonset": _start_daemonset,
    "horizontalpodautoscaling": _start_horizontal_pod_autoscaling,
    "job": _start_job,
    "cronjob": _start_cronjob,
    "ttl-after-finished": _start_ttl_after_finished,
    "service-lb-controller": _start_service_lb,
    "statefulset": _start_statefulset,
    "persistentvolume-binder": _start_persistent_volume_binder,
}


class ControllerManager:
    """Runs the enabled controllers as threads against one API server."""

    def __init__(self, config: ClientConfig, *, disabled: Collection[str] = (),
                 controllers: Mapping[str, Callable[[ControllerContext], Run]] = CONTROLLERS,
                 settings: ControllerManagerConfiguration = DEFAULT_CONFIGURATION,
                 controller_credentials: Callable[[str], ClientConfig] | None = None) -> None:
        """`controller_credentials(account)`: the credential of a controller's service account (see the
        module notes); None: every controller uses `config`."""
        unknown = set(disabled) - set(controllers)
        if unknown:
            raise ValueError(f"unknown controllers {sorted(unknown)}; known: {sorted(controllers)}")
        self.enabled = [name for name in controllers if name not in disabled]
        self._config = config
        self._controllers = controllers
        self._settings = settings
        self._client = RESTClient(config, user_agent="slimkube-controller-manager")
        self._credentials = controller_credentials
        self._controller_clients: list[RESTClient] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def _context_for(self, name: str, shared: ControllerContext) -> ControllerContext:
        """The shared context, with the controller's own client when it runs as its service account."""
        account = CONTROLLER_ACCOUNTS.get(name)
        if self._credentials is None or account is None:
            return shared
        client = RESTClient(self._credentials(account), user_agent=f"slimkube-controller-manager/{account}")
        self._controller_clients.append(client)
        return dataclasses.replace(shared, client=client)

    def start(self) -> None:
        ctx = ControllerContext(client=self._client, informers=InformerFactory(self._client), config=self._settings,
                                client_config=self._config)
        runs = {name: self._controllers[name](self._context_for(name, ctx)) for name in self.enabled}
        ctx.informers.start(self._stop)
        for name, run in runs.items():
            thread = threading.Thread(target=self._run, args=(name, run), name=f"controller-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("controller manager: started %s", ", ".join(self.enabled) or "no controllers")

    def health(self) -> str | None:
        """None while every started controller runs; else which stopped (`kubectl get cs`)."""
        if self._stop.is_set():
            return "the controller manager is stopping"
        stopped = [t.name.removeprefix("controller-") for t in self._threads if not t.is_alive()]
        return f"controllers stopped: {', '.join(stopped)}" if stopped else None

    def _run(self, name: str, run: Run) -> None:
        try:
            run(self._stop)
        except Exception:
            log.exception("controller %s stopped with an error", name)

    def stop(self, *, timeout: float = 10.0) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()
        for client in self._controller_clients:
            client.close()
        self._controller_clients.clear()
        self._client.close()
