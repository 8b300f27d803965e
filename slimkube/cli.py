"""The `slimkube` command (its flags: docs/operations.md).

One console script with a subcommand per daemon, as k3s does (`k3s server`, `k3s agent`); a bad flag or
config value is a usage error (exit 2), a failure to start exit 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from control.util.version import KUBERNETES_VERSION, SLIMKUBE_VERSION

if TYPE_CHECKING:  # the commands import their components when run, so `slimkube version` starts fast
    from control.apiserver.server import APIServer
    from control.client.kubeconfig import ClientConfig
    from control.controllers.manager import ControllerManagerConfiguration
    from control.controllers.nodelifecycle.zones import EvictionPolicy
    from control.util.iptables import Iptables
    from nodeagent.config import KubeletConfig
    from proxy.config import ProxyConfig
    from slimkube.allinone import KubeletLike, NodeGroupLike
    from slimkube.controlplane import SchedulerOptions
    from slimkube.leadership import LeaderElection
    from slimkube.nodes import NodeSpec, NodesPlan
    from slimkube.tokensource import JoinSecret

_Command = TypeVar("_Command", bound=Callable[..., Any])

DEFAULT_DATA_DIR = "/var/lib/slimkube"
DEFAULT_SERVICE_CIDR = "10.96.0.0/12"  # the server's default; an agent's cluster DNS is its tenth address


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """slimkube: a Kubernetes-compatible cluster in Python."""
    _dump_stacks_on_sigusr1()


def _dump_stacks_on_sigusr1() -> None:
    """`kill -USR1 PID` prints every thread's Python stack to stderr and the process carries on: for a daemon
    that seems stuck, where it is. faulthandler's own C handler, so it answers even when the main thread
    cannot run Python code (the case worth diagnosing)."""
    import faulthandler
    import signal
    import sys

    try:
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    except (OSError, ValueError, AttributeError):  # a stderr without a file descriptor (CliRunner's capture)
        pass


@main.command()
def version() -> None:
    """Print slimkube's version and the Kubernetes API level it serves."""
    click.echo(f"slimkube {SLIMKUBE_VERSION} (Kubernetes {KUBERNETES_VERSION})")


@main.command()
@click.option("--rebuild", is_flag=True, help="Import the images again even if they exist.")
def images(rebuild: bool) -> None:
    """Build the pause, busybox and python images into the local dockerd (no registry needed)."""
    import docker

    from nodeagent.images import BUSYBOX, PAUSE, PYTHON, ensure_image

    api = docker.APIClient(version="auto")
    for spec in (PAUSE, BUSYBOX, PYTHON):
        built = ensure_image(api, spec, rebuild=rebuild)
        click.echo(f"{spec.ref}: {'built' if built else 'present'}")


_disable_option = click.option(  # `server` and `up`; the names are checked by _parse_disable
    "--disable", default="", metavar="NAME,...",
    help="Comma-separated control-plane parts not to run, by upstream's name (e.g. endpoint, scheduler).")


def _security_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`server` and `up`: the audit and encryption-at-rest flags, handed to the command as one `security`
    mapping of ServerConfig fields (docs/apiserver.md)."""
    import functools

    @functools.wraps(command)
    def wrapped(*args: Any, audit_policy_file: str | None, audit_log_path: str | None, audit_log_maxage: int,
                audit_log_maxbackup: int, audit_log_maxsize: int, encryption_provider_config: str | None,
                **kwargs: Any) -> Any:
        from control.apiserver.audit.backend import LogOptions

        log = LogOptions(audit_log_path, max_age_days=audit_log_maxage, max_backups=audit_log_maxbackup,
                         max_size_mb=audit_log_maxsize) if audit_log_path else None
        security = {"audit_policy_file": audit_policy_file, "audit_log": log,
                    "encryption_provider_config": encryption_provider_config}
        return command(*args, security=security, **kwargs)

    options = [
        click.option("--audit-policy-file", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="An audit.k8s.io/v1 Policy: which requests are logged at which level."),
        click.option("--audit-log-path", default=None, metavar="PATH",
                     help="Write audit events as JSON lines to PATH ('-' for standard output)."),
        click.option("--audit-log-maxage", default=0, show_default=True, type=click.IntRange(0),
                     help="Days to keep rotated audit logs (by the time in their names; 0: no limit)."),
        click.option("--audit-log-maxbackup", default=0, show_default=True, type=click.IntRange(0),
                     help="Rotated audit logs to keep (0: all)."),
        click.option("--audit-log-maxsize", default=100, show_default=True, type=click.IntRange(0),
                     help="Megabytes an audit log reaches before it is rotated."),
        click.option("--encryption-provider-config", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="An apiserver.config.k8s.io/v1 EncryptionConfiguration: how resources are encrypted "
                     "in the store."),
    ]
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


_admission_config_option = click.option(  # `server` and `up`; read by the API server as it starts
    "--admission-control-config-file", "admission_config_file", default=None, metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="An AdmissionConfiguration (apiserver.config.k8s.io/v1) with the plugins' configuration, e.g. "
    "PodSecurity's defaults and exemptions (docs/admission.md).")


_node_monitor_grace_option = click.option(  # `server` and `up`; checked by _controller_settings
    "--node-monitor-grace-period", default="40s", show_default=True, metavar="DURATION",
    help="How long a node may stop posting status (Lease and Ready heartbeat) before the node lifecycle "
    "controller sets its conditions Unknown and taints it unreachable.")


def _node_eviction_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`server` and `up`: the node lifecycle controller's eviction rates (upstream's names and defaults),
    handed to the command as one `node_eviction` EvictionPolicy (docs/controllers.md)."""
    import functools

    @functools.wraps(command)
    def wrapped(*args: Any, node_eviction_rate: float, secondary_node_eviction_rate: float,
                unhealthy_zone_threshold: float, large_cluster_size_threshold: int, **kwargs: Any) -> Any:
        from control.controllers.nodelifecycle.zones import EvictionPolicy

        policy = EvictionPolicy(node_eviction_rate, secondary_node_eviction_rate, unhealthy_zone_threshold,
                                large_cluster_size_threshold)
        return command(*args, node_eviction=policy, **kwargs)

    options = [
        click.option("--node-eviction-rate", default=0.1, show_default=True, type=click.FloatRange(min=0),
                     help="Nodes per second, per zone, that get a NoExecute not-ready/unreachable taint "
                     "(which starts their pods' eviction) while the zone is healthy."),
        click.option("--secondary-node-eviction-rate", default=0.01, show_default=True,
                     type=click.FloatRange(min=0),
                     help="The rate in a zone in partial disruption (0 in a zone of at most "
                     "--large-cluster-size-threshold nodes)."),
        click.option("--unhealthy-zone-threshold", default=0.55, show_default=True, type=click.FloatRange(0, 1),
                     help="The share of not-ready nodes (at least 3) from which a zone is in partial disruption."),
        click.option("--large-cluster-size-threshold", default=50, show_default=True, type=click.IntRange(min=0),
                     help="Zones of more nodes than this keep evicting at the secondary rate in partial "
                     "disruption; smaller ones stop."),
    ]
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


_resource_quota_sync_option = click.option(  # `server` and `up`; checked by _controller_settings
    "--resource-quota-sync-period", default="5m", show_default=True, metavar="DURATION",
    help="How often the resource quota controller recounts every quota's usage in full (it also recounts "
    "when a counted object is created, changes or is deleted).")


_hpa_sync_option = click.option(  # `server` and `up`; checked by _controller_settings
    "--horizontal-pod-autoscaler-sync-period", default="15s", show_default=True, metavar="DURATION",
    help="How often the horizontal pod autoscaler controller looks at each HPA's metrics and target.")


def _scheduler_options(command: _Command) -> _Command:  # `server` and `up`; checked by _scheduler_settings
    for option in reversed([
        click.option("--scheduler-config", type=click.Path(dir_okay=False), metavar="FILE",
                     help="KubeSchedulerConfiguration YAML (kubescheduler.config.k8s.io/v1): profiles, plugins, "
                     "weights, pluginConfig, percentageOfNodesToScore, pod backoff [default: one profile, "
                     "default-scheduler, with upstream's default plugins]."),
        click.option("--scheduler-bind-address", default="127.0.0.1", show_default=True,
                     help="Where the scheduler serves /healthz, /livez, /readyz and /metrics (plain HTTP)."),
        click.option("--scheduler-port", default=10259, show_default=True, type=click.IntRange(0, 65535),
                     help="The scheduler's health and metrics port; 0 serves none."),
    ]):
        command = option(command)
    return command


def _scheduler_settings(config_file: str | None, bind_address: str, port: int) -> SchedulerOptions:
    """The scheduler's flags and its checked config file; a bad file or address is a usage error (exit 2)."""
    import ipaddress

    from control.scheduler.config import load
    from control.util.componentconfig import ConfigError
    from slimkube.controlplane import SchedulerOptions

    try:
        ipaddress.ip_address(bind_address)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--scheduler-bind-address") from None
    config = None
    if config_file:
        try:
            config = load(config_file)
        except ConfigError as exc:
            raise click.BadParameter(str(exc), param_hint="--scheduler-config") from None
    return SchedulerOptions(config=config, address=(bind_address, port) if port else None)


_max_endpoints_per_slice_option = click.option(  # `server` and `up`
    "--max-endpoints-per-slice", default=100, show_default=True, type=click.IntRange(1, 1000),
    help="The most endpoints the EndpointSlice controller puts in one EndpointSlice.")


_loadbalancer_pool_option = click.option(  # `server` and `up`; checked by _controller_settings
    "--loadbalancer-address-pool", default="", metavar="IP|CIDR,...",
    help="Addresses the service-lb-controller gives LoadBalancer Services, one each [default: none; every "
    "LoadBalancer Service gets the addresses of the Ready nodes].")


_node_cidr_mask_size_option = click.option(  # `server` and `up`; checked by _with_node_ipam
    "--node-cidr-mask-size", default=24, show_default=True, type=click.IntRange(1, 128),
    help="The size of the pod CIDR the node IPAM controller gives each Node out of --cluster-cidr.")


def _with_node_ipam(settings: ControllerManagerConfiguration, *, cluster_cidr: str, service_cidr: str,
                    node_cidr_mask_size: int) -> ControllerManagerConfiguration:
    """The controller settings with the node IPAM's ranges; a mask size that does not fit exits 2."""
    import dataclasses

    from control.controllers.nodeipam.cidrset import CIDRSet, CIDRSetError

    try:
        CIDRSet(cluster_cidr, node_cidr_mask_size)
    except CIDRSetError as exc:
        raise click.BadParameter(str(exc), param_hint="--node-cidr-mask-size") from None
    return dataclasses.replace(settings, cluster_cidr=cluster_cidr, service_cidr=service_cidr,
                               node_cidr_mask_size=node_cidr_mask_size)


def _positive_duration(value: str, flag: str) -> float:
    from control.util.componentconfig import ConfigError, parse_duration

    try:
        seconds = parse_duration(value, name=flag)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint=flag) from None
    if seconds <= 0:
        raise click.BadParameter("must be more than 0", param_hint=flag)
    return seconds


def _controller_settings(node_monitor_grace_period: str, resource_quota_sync_period: str, *,
                         max_endpoints_per_slice: int = 100, loadbalancer_address_pool: str = "",
                         hpa_sync_period: str = "15s",
                         node_eviction: EvictionPolicy | None = None) -> ControllerManagerConfiguration:
    """The controller manager's flags (Go durations, as upstream's) as its configuration; bad ones exit 2."""
    from control.controllers.manager import ControllerManagerConfiguration
    from control.controllers.nodelifecycle.zones import EvictionPolicy
    from control.controllers.servicelb.controller import parse_pool

    try:
        pool = tuple(parse_pool(loadbalancer_address_pool))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--loadbalancer-address-pool") from None
    return ControllerManagerConfiguration(
        node_monitor_grace_period=_positive_duration(node_monitor_grace_period, "--node-monitor-grace-period"),
        resource_quota_sync_period=_positive_duration(resource_quota_sync_period, "--resource-quota-sync-period"),
        max_endpoints_per_slice=max_endpoints_per_slice, loadbalancer_address_pool=pool,
        horizontal_pod_autoscaler_sync_period=_positive_duration(hpa_sync_period,
                                                                 "--horizontal-pod-autoscaler-sync-period"),
        node_eviction=node_eviction or EvictionPolicy())


def _parse_disable(text: str) -> frozenset[str]:
    from slimkube.controlplane import parse_disable

    try:
        return parse_disable(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--disable") from None


@main.command()
@click.option("--data-dir", default=DEFAULT_DATA_DIR, show_default=True, help="State, tokens and kubeconfig.")
@click.option("--bind-address", default="0.0.0.0", show_default=True)
@click.option("--port", default=6443, show_default=True, type=click.IntRange(0, 65535))
@click.option("--datastore", default="sqlite://", show_default=True,
              help="sqlite:// (DATA_DIR/state.db), sqlite:///abs/path.db or etcd://host:port.")
@click.option("--service-cidr", default="10.96.0.0/12", show_default=True)
@click.option("--cluster-cidr", default="10.244.0.0/16", show_default=True,
              help="Pod addresses of the whole cluster; the node IPAM controller gives each Node a part of it.")
@_node_cidr_mask_size_option
@click.option("--advertise-address", default=None,
              help="The IP the `kubernetes` Service's Endpoints name [default: --bind-address if it is a "
              "specific IP, else this host's address on the default route].")
@click.option("--enable-aggregator-routing", type=click.BOOL, default=True, show_default=True, metavar="BOOL",
              help="Send admission webhooks and aggregated APIs to a Service's endpoints (pod IPs) instead of its "
              "ClusterIP, which only a host running kube-proxy reaches (`slimkube up` runs one, and sets false).")
@_disable_option
@_node_monitor_grace_option
@_node_eviction_options
@_resource_quota_sync_option
@_max_endpoints_per_slice_option
@_loadbalancer_pool_option
@_hpa_sync_option
@click.option("--leader-elect/--no-leader-elect", default=True, show_default=True,
              help="Run the controllers only while holding the Lease kube-system/kube-controller-manager, so "
              "several servers on one etcd run them once.")
@click.option("--leader-elect-lease-duration", default="15s", show_default=True, metavar="DURATION")
@click.option("--leader-elect-renew-deadline", default="10s", show_default=True, metavar="DURATION")
@click.option("--leader-elect-retry-period", default="2s", show_default=True, metavar="DURATION")
@_scheduler_options
@_admission_config_option
@_security_options
@click.option("--service-account-issuer", default="https://kubernetes.default.svc.cluster.local", show_default=True,
              help="The `iss` of service account tokens, also the default audience (docs/service-accounts.md).")
@click.option("--service-account-signing-key-file", "--service-account-key-file", "service_account_key_file",
              type=click.Path(dir_okay=False), metavar="FILE",
              help="The RSA key service account tokens are signed and checked with; made when missing "
              "[default: DATA_DIR/tls/service.key].")
@click.option("--api-audiences", default="", metavar="AUD,...",
              help="The audiences a token must name to be accepted [default: the issuer].")
@click.option("-v", "--verbose", is_flag=True, help="Log at debug level.")
def server(data_dir: str, bind_address: str, port: int, datastore: str, service_cidr: str, cluster_cidr: str,
           node_cidr_mask_size: int, advertise_address: str | None, enable_aggregator_routing: bool, disable: str,
           node_monitor_grace_period: str, node_eviction: EvictionPolicy, resource_quota_sync_period: str,
           max_endpoints_per_slice: int, loadbalancer_address_pool: str,
           horizontal_pod_autoscaler_sync_period: str, leader_elect: bool, leader_elect_lease_duration: str,
           leader_elect_renew_deadline: str, leader_elect_retry_period: str, scheduler_config: str | None,
           scheduler_bind_address: str, scheduler_port: int, admission_config_file: str | None,
           service_account_issuer: str, service_account_key_file: str | None, api_audiences: str,
           verbose: bool, security: dict[str, Any]) -> None:
    """Run the control plane: the API server, the scheduler and the controller manager.
    Writes DATA_DIR/admin.kubeconfig and DATA_DIR/node-token."""
    import ipaddress
    import logging

    import uvloop

    from control.apiserver.server import ServerConfig
    from control.util import sdnotify
    from slimkube.controlplane import serve_forever

    for flag, value in (("--service-cidr", service_cidr), ("--cluster-cidr", cluster_cidr)):
        try:
            ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint=flag) from None
    if advertise_address is not None:
        try:
            ipaddress.ip_address(advertise_address)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--advertise-address") from None
    disabled = _parse_disable(disable)
    settings = _controller_settings(node_monitor_grace_period, resource_quota_sync_period,
                                    max_endpoints_per_slice=max_endpoints_per_slice,
                                    loadbalancer_address_pool=loadbalancer_address_pool,
                                    hpa_sync_period=horizontal_pod_autoscaler_sync_period,
                                    node_eviction=node_eviction)
    settings = _with_node_ipam(settings, cluster_cidr=cluster_cidr, service_cidr=service_cidr,
                               node_cidr_mask_size=node_cidr_mask_size)
    election = _leader_election(leader_elect, leader_elect_lease_duration, leader_elect_renew_deadline,
                                leader_elect_retry_period)
    scheduler = _scheduler_settings(scheduler_config, scheduler_bind_address, scheduler_port)
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = ServerConfig(data_dir=data_dir, bind_address=bind_address, port=port, datastore=datastore,
                          service_cidr=service_cidr, cluster_cidr=cluster_cidr, advertise_address=advertise_address,
                          service_account_issuer=service_account_issuer,
                          service_account_key_file=service_account_key_file or "",
                          api_audiences=tuple(a.strip() for a in api_audiences.split(",") if a.strip()),
                          enable_aggregator_routing=enable_aggregator_routing,
                          admission_config_file=admission_config_file, **security)

    def ready(api: object) -> None:
        click.echo(f"slimkube server: API at {api.url}; kubeconfig {api.kubeconfig_path}", err=True)  # type: ignore[attr-defined]
        sdnotify.ready()

    try:
        # uvloop: the same asyncio API on libuv, about a fifth less of the server's CPU per request
        # (bench/RESULTS.md, API server, 2026-11-27)
        uvloop.run(serve_forever(config, disable=disabled, election=election, settings=settings,
                                 scheduler=scheduler, ready=ready, stopping=sdnotify.stopping))
    except ValueError as exc:  # a bad --datastore URL or admission configuration file
        raise click.UsageError(str(exc)) from None


def _leader_election(enabled: bool, lease_duration: str, renew_deadline: str,
                     retry_period: str) -> LeaderElection:
    """The --leader-elect* flags (Go durations, as upstream's), checked as the elector will check them."""
    from control.client.leaderelection import check_timings
    from control.util.componentconfig import ConfigError, parse_duration
    from slimkube.leadership import LeaderElection

    try:
        election = LeaderElection(
            enabled=enabled,
            lease_duration=parse_duration(lease_duration, name="--leader-elect-lease-duration"),
            renew_deadline=parse_duration(renew_deadline, name="--leader-elect-renew-deadline"),
            retry_period=parse_duration(retry_period, name="--leader-elect-retry-period"))
        check_timings(election.lease_duration, election.renew_deadline, election.retry_period)
    except (ConfigError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None
    return election


def _logging(verbose: bool) -> None:
    import logging

    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _say(line: str) -> None:
    click.echo(line, err=True)


def _kubelet_config(config_file: str | None, **overrides: object) -> KubeletConfig:
    """The kubelet's settings: the file, then the flags given; a bad value is a usage error (exit 2)."""
    from control.util.componentconfig import ConfigError
    from nodeagent.config import load

    try:
        return load(config_file, overrides=overrides)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


def _kubelet_options(command: _Command) -> _Command:  # the flags `agent` and `up` share, as KubeletConfig fields
    for option in reversed([
        click.option("--config", "config_file", type=click.Path(dir_okay=False),
                      help="KubeletConfiguration YAML (kubelet.config.k8s.io/v1beta1 names); flags override it."),
        click.option("--node-name", help="Node name [default: this host's name]."),
        click.option("--pod-cidr", help="This node's pod CIDR, which must match the Node's spec.podCIDR if it has "
                     "one [default: the Node's spec.podCIDR, given by the node IPAM controller]."),
        click.option("--node-ip", help="The InternalIP to report [default: the address routing to the server]."),
        click.option("--pod-network", type=click.Choice(["vxlan", "host-gw", "none"]),
                     help="How this node reaches other nodes' pods: a VXLAN overlay, routes via their "
                     "InternalIPs (nodes on one subnet), or nothing (an external CNI) [default: the config's "
                     "podNetwork, vxlan]."),
        click.option("--network-plugin", type=click.Choice(["builtin", "cni"]),
                     help="How a pod's interface is made: the built-in bridge and IPAM, or the plugins of the first "
                     "CNI configuration list in --cni-conf-dir (a default one is written if there is none) "
                     "[default: the config's networkPlugin, builtin]."),
        click.option("--cni-conf-dir", help="CNI configuration lists [default: /etc/cni/net.d]."),
        click.option("--cni-bin-dir", help="Comma-separated directories of CNI plugins [default: /usr/lib/cni, "
                     "where Debian's containernetworking-plugins puts them]."),
        click.option("--cluster-dns", help="Comma-separated cluster DNS addresses pods get under dnsPolicy "
                     "ClusterFirst [default: the service CIDR's tenth address, 10.96.0.10]."),
        click.option("--cluster-domain", help="The cluster's DNS domain [default: cluster.local]."),
        click.option("--serve-dns/--no-serve-dns", default=True, show_default=True,
                     help="Run this node's cluster DNS server on its InternalIP, port 53."),
        click.option("-v", "--verbose", is_flag=True, help="Log at debug level."),
    ]):
        command = option(command)
    return command


def _make_kubelet(config: KubeletConfig, client_config: ClientConfig, *, serve_dns: bool = False,
                  tag: str = "agent") -> KubeletLike:
    """The kubelet, with this node's cluster DNS beside it unless --no-serve-dns (slimkube/nodedns.py)."""
    from control.client.rest import RESTClient
    from nodeagent.kubelet import Kubelet
    from slimkube.nodedns import with_dns

    kubelet = Kubelet(config, RESTClient(client_config, user_agent=f"slimkube-kubelet/{config.node_name}"))
    return with_dns(kubelet, config, client_config, say=_say, tag=tag) if serve_dns else kubelet


def _credentials(kubeconfig: str | None, server: str | None, token: str | None, token_file: str | None,
                 ca_file: str | None, *, tag: str) -> JoinSecret | None:
    """`agent` and `proxy` reach the API server with a kubeconfig or with --server and the join token, never
    both; the token from --token-file, SLIMKUBE_TOKEN or (deprecated) --token (slimkube/tokensource.py).
    None with a kubeconfig. SLIMKUBE_TOKEN leaves this process's environment, so children do not inherit it."""
    import os

    from slimkube.tokensource import ENV_VAR, TokenSourceError, resolve

    if kubeconfig and (server or token or token_file or ca_file):
        raise click.UsageError("give --kubeconfig or --server/--token-file, not both")
    try:
        secret = None if kubeconfig else resolve(token=token, token_file=token_file, environ=os.environ)
    except TokenSourceError as exc:
        raise click.BadParameter(str(exc), param_hint=exc.flag) from None
    os.environ.pop(ENV_VAR, None)
    if not kubeconfig and not (server and secret):
        raise click.UsageError(f"--server and the join token (--token-file FILE or {ENV_VAR} in the environment) "
                               "are required (or --kubeconfig)")
    for warning in secret.warnings if secret else ():
        _say(f"[{tag}] warning: {warning}")
    return secret


def _client_config(kubeconfig: str | None, server: str | None, secret: JoinSecret | None, ca_file: str | None, *,
                   data_dir: str, tag: str) -> ClientConfig:
    """The credential from a kubeconfig, or by joining with the node token (nodeagent/bootstrap.py: the CA
    from /cacerts is checked against the K10 token's hash and kept under DATA_DIR/agent)."""
    from control.client.kubeconfig import KubeconfigError, load_kubeconfig
    from nodeagent.bootstrap import BootstrapError, join

    try:
        if kubeconfig:
            client_config = load_kubeconfig(kubeconfig)
        else:
            assert secret is not None  # _credentials saw to it
            client_config = join(str(server), secret.token, data_dir=data_dir, ca_file=ca_file)
    except (BootstrapError, KubeconfigError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    _say(f"[{tag}] API server {client_config.server}" + (f" (CA {client_config.ca_file})"
                                                        if client_config.ca_file else ""))
    return client_config


def _token_options(command: _Command) -> _Command:  # `agent` and `proxy`: the join token, never on argv
    for option in reversed([
        click.option("--token-file", type=click.Path(dir_okay=False), metavar="FILE",
                     help="A file (mode 0600) holding the server's DIR/node-token (K10<CA hash>::node:<password>) "
                     "[default: SLIMKUBE_TOKEN from the environment]."),
        click.option("--token", hidden=True,
                     help="Deprecated: the join token itself, visible to every local user in `ps`; use "
                     "--token-file or SLIMKUBE_TOKEN."),
    ]):
        command = option(command)
    return command


@main.command()
@click.option("--server", help="The API server URL, e.g. https://10.0.0.1:6443.")
@_token_options
@click.option("--ca-file", type=click.Path(dir_okay=False, exists=True),
              help="The server's CA; needed when the token has no CA hash.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False, exists=True),
              help="Connect with this kubeconfig instead of --server and the join token.")
@click.option("--data-dir", help=f"Kubelet state (IPAM, pod volumes, the server's CA) [default: {DEFAULT_DATA_DIR}].")
@click.option("--port", "--kubelet-port", "kubelet_port", type=click.IntRange(0, 65535),
              help="The kubelet's HTTPS port (logs, /pods, /stats) [default: 10250].")
@click.option("--cluster-cidr", help="Pod addresses of the whole cluster (not masqueraded between pods) "
              "[default: the config's, 10.244.0.0/16].")
@_kubelet_options
def agent(server: str | None, token: str | None, token_file: str | None, ca_file: str | None, kubeconfig: str | None,
          data_dir: str | None, kubelet_port: int | None, cluster_cidr: str | None, config_file: str | None,
          node_name: str | None, pod_cidr: str | None, node_ip: str | None, pod_network: str | None,
          network_plugin: str | None, cni_conf_dir: str | None, cni_bin_dir: str | None,
          cluster_dns: str | None, cluster_domain: str | None, serve_dns: bool, verbose: bool) -> None:
    """Run a kubelet on this host that joins the cluster at --server (or --kubeconfig) until SIGINT/SIGTERM.

    With a K10 token the agent checks the server's CA (GET /cacerts) against the token's hash before it sends
    the token. Stopping the agent leaves the pods running; the next agent adopts them.
    """
    from control.util import sdnotify
    from slimkube.allinone import NodeError, run_kubelet
    from slimkube.nodelock import LockHeld, NodeLock
    from slimkube.stopsignal import StopOnSignal
    from slimkube.upplan import cluster_dns_flag, with_default_cluster_dns

    secret = _credentials(kubeconfig, server, token, token_file, ca_file, tag="agent")
    config = _kubelet_config(config_file, data_dir=data_dir, node_name=node_name, pod_cidr=pod_cidr,
                             node_ip=node_ip, pod_network=pod_network, network_plugin=network_plugin,
                             cni_conf_dir=cni_conf_dir, cni_bin_dir=cni_bin_dir, port=kubelet_port,
                             cluster_cidr=cluster_cidr,
                             cluster_dns=cluster_dns_flag(cluster_dns), cluster_domain=cluster_domain)
    config = with_default_cluster_dns(config, DEFAULT_SERVICE_CIDR)
    _logging(verbose)
    client_config = _client_config(kubeconfig, server, secret, ca_file, data_dir=config.data_dir, tag="agent")
    try:
        with NodeLock(config.data_dir) as lock, StopOnSignal() as signals:
            lock.acquire(what="starting another agent")
            run_kubelet(_make_kubelet(config, client_config, serve_dns=serve_dns), signals.event, say=_say,
                        tag="agent",
                        on_registered=sdnotify.ready, on_stopping=sdnotify.stopping)
    except (LockHeld, NodeError) as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
@click.option("--data-dir", default=DEFAULT_DATA_DIR, show_default=True,
              help="Store, tokens, kubeconfig, kubelet state; DATA_DIR/kubelet.yaml is the kubelet's config if "
              "present.")
@click.option("--bind-address", default="0.0.0.0", show_default=True, help="Where the API server listens.")
@click.option("--port", default=6443, show_default=True, type=click.IntRange(0, 65535), help="The API server's port.")
@click.option("--datastore", default="sqlite://", show_default=True, help="As `slimkube server --datastore`.")
@click.option("--service-cidr", default="10.96.0.0/12", show_default=True)
@click.option("--cluster-cidr", default=None,
              help="Pod addresses; this node gets its first /24 [default: the kubelet config's, 10.244.0.0/16].")
@click.option("--kubelet-port", "kubelet_port", type=click.IntRange(0, 65535),
              help="The kubelet's HTTPS port (logs, /pods, /stats) [default: 10250].")
@click.option("--nodes", "node_count", default=1, show_default=True, type=click.IntRange(1, 250),
              help="Nodes to run: node 1 here, nodes 2..N each in a network namespace named NODE-i with its own "
              "`slimkube agent` and `slimkube proxy` joined by --server/--token-file (see `slimkube node`).")
@click.option("--nodes-cidr", default="10.250.0.0/24", show_default=True,
              help="With --nodes: the network joining the node namespaces to this host (this host takes the "
              "first address, node i the i-th).")
@click.option("--node-subnets", "node_subnets", default=1, show_default=True, type=click.IntRange(1, 64),
              help="With --nodes: cut the node network into K subnets joined by a router namespace (no L2 "
              "between them, as hosts in different networks); node i goes on subnet (i-1) mod K.")
@_node_cidr_mask_size_option
@_disable_option
@_node_monitor_grace_option
@_node_eviction_options
@_resource_quota_sync_option
@_max_endpoints_per_slice_option
@_loadbalancer_pool_option
@_hpa_sync_option
@_scheduler_options
@_admission_config_option
@_security_options
@_kubelet_options
def up(data_dir: str, bind_address: str, port: int, datastore: str, service_cidr: str, cluster_cidr: str | None,
       kubelet_port: int | None, node_count: int, nodes_cidr: str, node_subnets: int, node_cidr_mask_size: int,
       disable: str, node_monitor_grace_period: str, node_eviction: EvictionPolicy,
       resource_quota_sync_period: str, max_endpoints_per_slice: int, loadbalancer_address_pool: str,
       horizontal_pod_autoscaler_sync_period: str, scheduler_config: str | None, scheduler_bind_address: str,
       scheduler_port: int, admission_config_file: str | None, config_file: str | None, node_name: str | None,
       pod_cidr: str | None,
       node_ip: str | None, pod_network: str | None, network_plugin: str | None, cni_conf_dir: str | None,
       cni_bin_dir: str | None, cluster_dns: str | None, cluster_domain: str | None,
       serve_dns: bool, verbose: bool, security: dict[str, Any]) -> None:
    """Run a one-node cluster on this host: the API server, a kubelet and the kube-proxy, until Ctrl-C.

    Prints progress, then the admin kubeconfig path once the node is Ready. Ctrl-C stops them; the pods keep
    running (and the proxy's rules stay) and the next `up` adopts them; `slimkube down` removes them.
    DATA_DIR/kube-proxy.yaml, if present, is the proxy's
    KubeProxyConfiguration (its node name and cluster CIDR are the kubelet's).

    With --nodes N, nodes 2..N run in network namespaces on a node bridge (DATA_DIR/nodes/NAME holds each
    one's state and logs; DATA_DIR/nodes/kubelet.yaml and kube-proxy.yaml, if present, configure them);
    `up` prints "[up] ready" once every node is Ready.
    """
    import dataclasses

    from control.util.componentconfig import ConfigError
    from nodeagent.bootstrap import BootstrapError, join
    from proxy.app import ProxyServer
    from slimkube.allinone import NodeError, run_up
    from slimkube.componentcreds import KUBE_PROXY
    from slimkube.controlplane import component_config
    from slimkube.nodelock import LockHeld, NodeLock
    from slimkube.stopsignal import StopOnSignal
    from slimkube.upplan import UpFlags, UpPlanError, gather_facts, plan_up

    settings = _controller_settings(node_monitor_grace_period, resource_quota_sync_period,
                                    max_endpoints_per_slice=max_endpoints_per_slice,
                                    loadbalancer_address_pool=loadbalancer_address_pool,
                                    hpa_sync_period=horizontal_pod_autoscaler_sync_period,
                                    node_eviction=node_eviction)
    scheduler = _scheduler_settings(scheduler_config, scheduler_bind_address, scheduler_port)
    flags = UpFlags(data_dir=data_dir, bind_address=bind_address, port=port, datastore=datastore,
                    service_cidr=service_cidr, cluster_cidr=cluster_cidr, kubelet_port=kubelet_port,
                    node_count=node_count, nodes_cidr=nodes_cidr, node_subnets=node_subnets, disable=disable,
                    config_file=config_file,
                    node_name=node_name, pod_cidr=pod_cidr, node_ip=node_ip, pod_network=pod_network,
                    network_plugin=network_plugin, cni_conf_dir=cni_conf_dir, cni_bin_dir=cni_bin_dir,
                    cluster_dns=cluster_dns,
                    cluster_domain=cluster_domain, serve_dns=serve_dns,
                    admission_config_file=admission_config_file)
    try:
        plan = plan_up(flags, gather_facts(flags))
    except UpPlanError as exc:
        if exc.flag is not None:
            raise click.BadParameter(str(exc), param_hint=exc.flag) from None
        raise click.UsageError(str(exc)) from None
    except ConfigError as exc:  # a config file that cannot be read or parsed
        raise click.UsageError(str(exc)) from None
    plan = dataclasses.replace(plan, server=dataclasses.replace(plan.server, **security))
    for note in plan.notes:
        _say(note)
    settings = _with_node_ipam(settings, cluster_cidr=plan.kubelet.cluster_cidr, service_cidr=service_cidr,
                               node_cidr_mask_size=node_cidr_mask_size)
    _logging(verbose)

    def join_local(api: APIServer) -> ClientConfig:
        # the kubelet joins exactly as an agent would, trusting the CA it just made
        try:
            return join(api.url, api.node_token, data_dir=data_dir, ca_file=api.certs.ca_path if api.certs else None)
        except BootstrapError as exc:
            raise NodeError(str(exc)) from exc

    def make_nodes(api: APIServer) -> NodeGroupLike:
        # nodes 2..N join through the node bridge with the node token, as workers do
        from slimkube.multinode import node_group

        assert plan.nodes is not None
        return node_group(data_dir, plan.nodes, plan.node_join(api_port=api.port, token=api.node_token), say=_say)

    try:
        with NodeLock(data_dir) as lock, StopOnSignal() as signals:
            lock.acquire(what="running `up` again")
            _say(f"[up] data dir {data_dir}; node {plan.kubelet.node_name}, pod CIDR "
                 f"{plan.kubelet.pod_cidr or 'from the node IPAM controller'}")
            if plan.nodes is not None:
                _start_node_network(data_dir, plan.nodes)
            run_up(plan.server, lambda client_config: _make_kubelet(plan.kubelet, client_config,
                                                                    serve_dns=plan.serve_dns, tag="up"),
                   join=join_local, signals=signals, say=_say,
                   make_proxy=lambda api: ProxyServer(plan.proxy, component_config(api, KUBE_PROXY)),
                   make_nodes=make_nodes if plan.nodes is not None else None, disable=plan.disabled,
                   settings=settings, scheduler=scheduler)
    except (LockHeld, NodeError) as exc:
        raise click.ClickException(str(exc)) from None
    except ValueError as exc:  # a bad --datastore URL or admission configuration file
        raise click.UsageError(str(exc)) from None


def _start_node_network(data_dir: str, plan: NodesPlan) -> None:
    from slimkube.allinone import NodeError
    from slimkube.multinode import start_network
    from slimkube.nodenet import NodeNetError

    try:
        start_network(data_dir, plan, say=_say)
    except (NodeNetError, OSError) as exc:
        raise NodeError(f"the node network could not be made: {exc}") from exc


@main.command()
@click.option("--data-dir", default=DEFAULT_DATA_DIR, show_default=True, help="The data dir `up` ran with.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="The kubelet config `up` ran with [default: DATA_DIR/kubelet.yaml if present].")
@click.option("--node-name", help="Node name [default: this host's name].")
def down(data_dir: str, config_file: str | None, node_name: str | None) -> None:
    """Remove this node's pods (containers labelled slimkube.io/node=<node>), pod bridge, iptables chains (the
    kubelet's and the kube-proxy's) and IPAM state. Keeps the data store: the Pod objects remain and the next
    `up` starts them again. Refuses while an `up` or `agent` runs with this data dir.

    After `up --nodes N`: first the same for nodes 2..N inside their namespaces, then the namespaces, their
    veths, the node bridge and routes.
    """
    import docker

    from control.util.iptables import detect
    from nodeagent.teardown import RealHostNetwork, teardown
    from slimkube.multinode import down_nodes
    from slimkube.nodelock import LockHeld, NodeLock
    from slimkube.upplan import kubelet_config_file

    config = _kubelet_config(kubelet_config_file(data_dir, config_file), data_dir=data_dir,
                             node_name=node_name)
    node_errors: list[str] = []
    try:
        with NodeLock(data_dir) as lock:
            lock.acquire(what="`down`")
            node_errors = down_nodes(data_dir, say=_say)
            iptables = detect()
            report = teardown(config, docker_api=docker.APIClient(version="auto"), iptables=iptables,
                              network=RealHostNetwork(), log=lambda line: _say(f"[down] {line}"))
            proxy_rules_removed = _cleanup_proxy_rules(iptables, "down")
    except LockHeld as exc:
        raise click.ClickException(str(exc)) from None
    _say(f"[down] removed {report.containers} containers, {report.veths} veths, "
         f"bridge {'removed' if report.bridge else 'absent'}, chains {', '.join(report.chains) or 'not removed'}, "
         f"IPAM state {'removed' if report.ipam_state else 'absent'}, {report.pod_dirs} pod directories")
    _say(f"[down] kept the data store and tokens in {data_dir} (remove it to forget the cluster)")
    errors = [*node_errors, *report.errors]
    if errors or not proxy_rules_removed:
        for error in errors:
            _say(f"[down] error: {error}")
        raise click.ClickException(f"{len(errors) + (not proxy_rules_removed)} things could not be removed")


@main.group()
def node() -> None:
    """Stop and start the kubelet of one node `up --nodes N` runs in a namespace (failure tests, demos).

    `node stop NAME` marks the node stopped and ends its agent (its pods keep running, its Node stops
    reporting); `node start NAME` clears the mark and the running `up` starts the agent again, which adopts
    the pods. Node 1 runs inside `up` itself and is stopped with it.
    """


def _node_of(data_dir: str, name: str) -> NodeSpec:  # a node of a running `up --nodes`
    from slimkube.multinode import find_node
    from slimkube.nodelock import LockHeld, NodeLock

    try:
        spec = find_node(data_dir, name)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    with NodeLock(data_dir) as probe:  # held by the running `up`; taking it means none runs
        try:
            probe.acquire(what="")
        except LockHeld:  # `up` runs, which is what we need
            return spec
    raise click.ClickException(f"no `slimkube up` is running with data dir {data_dir}")


@node.command("stop")
@click.argument("name")
@click.option("--data-dir", default=DEFAULT_DATA_DIR, show_default=True, help="The data dir `up` runs with.")
def node_stop(name: str, data_dir: str) -> None:
    """Stop node NAME's kubelet (SIGTERM; pods keep running) until `slimkube node start NAME`."""
    from slimkube.nodeprocs import stop_kubelet

    spec = _node_of(data_dir, name)
    try:
        pid = stop_kubelet(spec)
    except TimeoutError as exc:
        raise click.ClickException(str(exc)) from None
    _say(f"[node {name}] kubelet " + (f"stopped (pid {pid}); pods keep running" if pid else "was not running"))


@node.command("start")
@click.argument("name")
@click.option("--data-dir", default=DEFAULT_DATA_DIR, show_default=True, help="The data dir `up` runs with.")
def node_start(name: str, data_dir: str) -> None:
    """Let the running `up` start node NAME's kubelet again; returns once it runs (not yet Ready)."""
    from slimkube.nodeprocs import start_kubelet

    spec = _node_of(data_dir, name)
    try:
        pid = start_kubelet(spec)
    except TimeoutError as exc:
        raise click.ClickException(str(exc)) from None
    _say(f"[node {name}] kubelet started (pid {pid})")


def _proxy_config(config_file: str | None, **overrides: object) -> ProxyConfig:
    """The proxy's settings: the KubeProxyConfiguration file, then the flags given; bad values exit 2."""
    from control.util.componentconfig import ConfigError
    from proxy.config import load

    try:
        return load(config_file, overrides=overrides)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


def _cleanup_proxy_rules(iptables: Iptables, tag: str) -> bool:
    """Remove the proxy's chains and jumps; False (after saying why) if that failed."""
    from control.util.iptables import IptablesError
    from proxy.app import run_cleanup

    try:
        removed = run_cleanup(iptables)
    except IptablesError as exc:
        _say(f"[{tag}] error: removing the proxy's rules: {exc}")
        return False
    _say(f"[{tag}] proxy rules {'removed' if removed else 'absent'} ({iptables.mode.value} backend)")
    return True


@main.command()
@click.option("--kubeconfig", type=click.Path(dir_okay=False, exists=True),
              help="Connect with this kubeconfig [default: the config file's clientConnection.kubeconfig].")
@click.option("--server", help="The API server URL, e.g. https://10.0.0.1:6443 (with the join token).")
@_token_options
@click.option("--ca-file", type=click.Path(dir_okay=False, exists=True),
              help="The server's CA; needed when the token has no CA hash.")
@click.option("--data-dir", default=DEFAULT_DATA_DIR, show_default=True,
              help="Where the server's CA fetched when joining with the token is kept.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="KubeProxyConfiguration YAML (kubeproxy.config.k8s.io/v1alpha1 names); flags override it.")
@click.option("--cleanup", is_flag=True, help="Remove every iptables chain and jump the proxy made, then exit.")
@click.option("--hostname-override", help="This node's name [default: the host's name].")
@click.option("--cluster-cidr", help="Pod addresses; service traffic from outside is masqueraded.")
@click.option("--healthz-bind-address", help="IP:port of /healthz and /livez [default: 0.0.0.0:10256].")
@click.option("--metrics-bind-address", help="IP:port of /metrics [default: 127.0.0.1:10249].")
@click.option("-v", "--verbose", is_flag=True, help="Log at debug level.")
def proxy(kubeconfig: str | None, server: str | None, token: str | None, token_file: str | None,
          ca_file: str | None, data_dir: str,
          config_file: str | None, cleanup: bool, hostname_override: str | None, cluster_cidr: str | None,
          healthz_bind_address: str | None, metrics_bind_address: str | None, verbose: bool) -> None:
    """Run the kube-proxy (iptables mode) on this host until SIGINT/SIGTERM: Services and Endpoints from the
    API server become KUBE-* chains in the nat and filter tables.

    Stopping it leaves the rules in place (traffic keeps flowing; the next start re-syncs them). `--cleanup`
    removes them and exits; it needs no API server.
    """
    from control.util import sdnotify
    from control.util.iptables import IptablesError, detect
    from proxy.app import ProxyServer
    from slimkube.stopsignal import StopOnSignal

    config = _proxy_config(config_file, kubeconfig=kubeconfig, hostname_override=hostname_override,
                           cluster_cidr=cluster_cidr, healthz_bind_address=healthz_bind_address,
                           metrics_bind_address=metrics_bind_address)
    _logging(verbose)
    if cleanup:
        try:
            iptables = detect()
        except IptablesError as exc:
            raise click.ClickException(str(exc)) from None
        if not _cleanup_proxy_rules(iptables, "proxy"):
            raise click.ClickException("the proxy's rules could not all be removed")
        return
    if kubeconfig and (server or token or token_file or ca_file):
        raise click.UsageError("give --kubeconfig or --server/--token-file, not both")
    kubeconfig = None if (server or token or token_file) else (config.kubeconfig or None)  # flags win
    secret = _credentials(kubeconfig, server, token, token_file, ca_file, tag="proxy")
    client_config = _client_config(kubeconfig, server, secret, ca_file, data_dir=data_dir, tag="proxy")
    proxy_server = ProxyServer(config, client_config)
    with StopOnSignal() as signals:
        try:
            proxy_server.start()
        except (IptablesError, OSError, RuntimeError) as exc:
            raise click.ClickException(f"the proxy did not start: {exc}") from None
        _say(f"[proxy] node {config.node_name}: serving " + ", ".join(
            f"{job} on :{port}" for job, port in sorted(proxy_server.ports.items())))
        try:
            while not signals.event.is_set():
                if proxy_server.wait_synced(0.2):
                    _say("[proxy] first sync done")
                    sdnotify.ready()
                    break
            while not signals.event.wait(1.0):
                pass
        finally:
            _say("[proxy] stopping (rules stay in place)")
            sdnotify.stopping()
            proxy_server.stop()


if __name__ == "__main__":
    main()
