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


def _not_built(name: str, issue: int) -> None:
    @main.command(name=name, context_settings=_PASS_THROUGH, add_help_option=False)
    def command() -> None:
        click.echo(f"slimkube {name}: not built yet (issue {issue}); see README.md", err=True)
        sys.exit(NOT_BUILT_EXIT)

    command.help = f"Not built yet (issue {issue})."


_not_built("server", 3)
_not_built("agent", 5)
_not_built("proxy", 6)
_not_built("up", 5)
_not_built("down", 5)
