"""Find and remove what tests made on the host: containers by label, namespaces and links by name prefix.

Only things that carry the test label or prefix are ever touched, so a cluster a developer runs on the
same host is left alone.
"""

from __future__ import annotations

import subprocess

TEST_LABEL = "slimkube.test"
TEST_PREFIX = "sktest"


def remove_test_containers(api: object) -> int:
    """Force-remove every container labelled `slimkube.test`, with its anonymous volumes."""
    import docker.errors

    removed = 0
    for c in api.containers(all=True, filters={"label": TEST_LABEL}):
        try:
            api.remove_container(c["Id"], force=True, v=True)
            removed += 1
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:  # 409 "removal already in progress": someone else removes it
            if exc.status_code != 409:
                raise
    return removed


def delete_netns(name: str) -> None:
    subprocess.run(["ip", "netns", "delete", name], capture_output=True)


def delete_link(name: str) -> None:
    subprocess.run(["ip", "link", "delete", name], capture_output=True)


def list_test_netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(TEST_PREFIX)]
