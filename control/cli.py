"""The `slimkube` command (shared/DESIGN.md, "Command-line contract").

One console script with a subcommand per daemon, as k3s does (`k3s server`, `k3s agent`). Subcommands
whose issue has not landed yet say so and exit 2, so scripts written against the contract fail loudly
instead of doing nothing.
"""

from __future__ import annotations

import sys

import click

from control.version import KUBERNETES_VERSION, SLIMKUBE_VERSION

NOT_BUILT_EXIT = 2
DEFAULT_DATA_DIR = "/var/lib/slimkube"
_PASS_THROUGH = {"ignore_unknown_options": True, "allow_extra_args": True}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """slimkube: a Kubernetes-compatible cluster in Python."""


@main.command()
def version() -> None:
    """Print slimkube's version and the Kubernetes API level it serves."""
    click.echo(f"slimkube {SLIMKUBE_VERSION} (Kubernetes {KUBERNETES_VERSION})")


@main.command()
@click.option("--rebuild", is_flag=True, help="Import the images again even if they exist.")
def images(rebuild: bool) -> None:
    """Build the pause and busybox images into the local dockerd (no registry needed)."""
    import docker

    from nodeagent.images import BUSYBOX, PAUSE, ensure_image

    api = docker.APIClient(version="auto")
    for spec in (PAUSE, BUSYBOX):
        built = ensure_image(api, spec, rebuild=rebuild)
        click.echo(f"{spec.ref}: {'built' if built else 'present'}")


@main.command()
@click.option("--data-dir", default=DEFAULT_DATA_DIR, show_default=True, help="State, tokens and kubeconfig.")
@click.option("--bind-address", default="0.0.0.0", show_default=True)
@click.option("--port", default=6443, show_default=True, type=click.IntRange(0, 65535))
@click.option("--datastore", default="sqlite://", show_default=True,
              help="sqlite:// (DATA_DIR/state.db), sqlite:///abs/path.db or etcd://host:port.")
@click.option("--service-cidr", default="10.96.0.0/12", show_default=True)
@click.option("--cluster-cidr", default="10.244.0.0/16", show_default=True)
@click.option("--disable", default="", help="Comma-separated components not to run (none exist yet besides "
              "the API server).")
@click.option("-v", "--verbose", is_flag=True, help="Log at debug level.")
def server(data_dir: str, bind_address: str, port: int, datastore: str, service_cidr: str, cluster_cidr: str,
           disable: str, verbose: bool) -> None:
    """Run the control plane (today: the API server). Writes DATA_DIR/admin.kubeconfig and DATA_DIR/node-token."""
    import asyncio
    import ipaddress
    import logging

    from control.apiserver.server import ServerConfig, serve_forever

    for flag, value in (("--service-cidr", service_cidr), ("--cluster-cidr", cluster_cidr)):
        try:
            ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint=flag) from None
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = ServerConfig(data_dir=data_dir, bind_address=bind_address, port=port, datastore=datastore,
                          service_cidr=service_cidr, cluster_cidr=cluster_cidr)

    def ready(api: object) -> None:
        click.echo(f"slimkube server: API at {api.url}; kubeconfig {api.kubeconfig_path}", err=True)  # type: ignore[attr-defined]

    try:
        asyncio.run(serve_forever(config, ready=ready))
    except ValueError as exc:  # a bad --datastore URL
        raise click.UsageError(str(exc)) from None


def _not_built(name: str, issue: int) -> None:
    @main.command(name=name, context_settings=_PASS_THROUGH, add_help_option=False)
    def command() -> None:
        click.echo(f"slimkube {name}: not built yet (issue {issue}); see README.md", err=True)
        sys.exit(NOT_BUILT_EXIT)

    command.help = f"Not built yet (issue {issue})."


_not_built("agent", 5)
_not_built("proxy", 6)
_not_built("up", 5)
_not_built("down", 5)


if __name__ == "__main__":
    main()
