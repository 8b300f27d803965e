"""Test harness shared by tests/unit, tests/integration and tests/e2e.

The real substrate (root, dockerd, iptables, network namespaces) is reached only through the fixtures
here. Where it is missing a test is skipped on a developer's machine, but under CI=true it FAILS: CI must
never go green on mocks alone.

Everything a test makes is named or labelled so it can be found again, and removed at teardown even when
the test fails: containers carry the label `slimkube.test` (plus upstream's pod labels when they stand
for a pod), network namespaces and links start with `sktest`. Leftovers of an earlier crashed run are
swept at session start; `tests/support/leftovers.py` checks nothing is left at the end of CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests.support.leftovers import leftovers
from tests.support.substrate import (
    TEST_LABEL,
    TEST_PREFIX,
    delete_link,
    delete_netns,
    remove_test_containers,
)

IN_CI = os.environ.get("CI") == "true"
TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark by directory, so `-m "not privileged and not e2e"` selects the fast, rootless unit tests; and
    run the tests on the shared cluster (tests/e2e/shared_cluster.py) last. That cluster lives until the
    session ends, and its host node's kube-proxy owns this host's KUBE-SERVICES chain: a test that starts
    a proxy or an `up` of its own must not run while it is up."""
    for item in items:
        parts = Path(item.path).relative_to(TESTS).parts
        if parts[0] == "integration":
            item.add_marker(pytest.mark.privileged)
        elif parts[0] == "e2e":
            item.add_marker(pytest.mark.privileged)
            item.add_marker(pytest.mark.e2e)
    items.sort(key=lambda item: "workload_cluster" in getattr(item, "fixturenames", ()))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if tests left containers, chains, namespaces or links behind. Under CI every pod
    container and KUBE-* chain counts; elsewhere only what tests labelled or named, so a cluster the
    developer runs on this host does not fail the suite."""
    if os.geteuid() != 0 or shutil.which("docker") is None:
        return
    found = leftovers(strict=IN_CI)
    if found:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for item in found:
            reporter.write_line(f"LEFT BEHIND: {item}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def unavailable(what: str, why: str) -> NoReturn:
    """Skip on a developer's machine; fail under CI=true, where the real substrate is required."""
    message = f"{what} is not available: {why}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: integration tests must run against the real thing)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def root() -> None:
    if os.geteuid() != 0:
        unavailable("root", "this test needs root (run the suite with sudo)")


@pytest.fixture(scope="session")
def docker_api(root: None) -> Iterator[object]:
    """docker's low-level APIClient for a running dockerd; test containers swept before and after."""
    import docker

    try:
        api = docker.APIClient(version="auto", timeout=60)
        api.ping()
    except Exception as exc:  # noqa: BLE001 - any failure to reach the daemon means the same: no dockerd
        unavailable("dockerd", f"{exc} (run ./install.sh)")
    remove_test_containers(api)
    yield api
    remove_test_containers(api)
    api.close()


@pytest.fixture(scope="session")
def images(docker_api: object) -> None:
    """slimkube/pause:1 and slimkube/busybox:1 exist (built here when missing)."""
    from nodeagent.images import BUSYBOX, PAUSE, ensure_image

    for spec in (PAUSE, BUSYBOX):
        ensure_image(docker_api, spec)


@pytest.fixture(scope="session")
def iptables(root: None) -> str:
    """The iptables binary of the backend in use; fails under CI when missing."""
    path = shutil.which("iptables")
    if path is None:
        unavailable("iptables", "not installed (run ./install.sh)")
    probe = subprocess.run([path, "-w", "-t", "nat", "-S"], capture_output=True, text=True)
    if probe.returncode != 0:
        unavailable("iptables", probe.stderr.strip())
    return path


@pytest.fixture
def run_id() -> str:
    """A short id unique to this test, for names and the `slimkube.test` label."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def container_labels(run_id: str) -> dict[str, str]:
    return {TEST_LABEL: run_id}


@pytest.fixture
def cleanup() -> Iterator[Callable[[Callable[[], object]], None]]:
    """Register undo actions; they run last-in first-out at teardown, each even if another fails."""
    actions: list[Callable[[], object]] = []
    yield actions.append
    errors = []
    for action in reversed(actions):
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - keep undoing the rest; report all at the end
            errors.append(exc)
    if errors:
        raise RuntimeError(f"cleanup failed: {errors}")


@pytest.fixture
def netns(root: None, run_id: str, cleanup: Callable) -> Callable[[str], str]:
    """Make a network namespace `sktest-<run>-<suffix>`; deleted at teardown."""

    def make(suffix: str = "ns") -> str:
        name = f"{TEST_PREFIX}-{run_id}-{suffix}"
        subprocess.run(["ip", "netns", "add", name], check=True)
        cleanup(lambda: delete_netns(name))
        return name

    return make


@pytest.fixture
def link_name(root: None, run_id: str, cleanup: Callable) -> Callable[[str], str]:
    """A host link name `sktN…` (≤15 chars) that the test will create; deleted at teardown if it exists."""

    def make(suffix: str) -> str:
        name = f"sk{run_id[:6]}{suffix}"[:15]
        cleanup(lambda: delete_link(name))
        return name

    return make
