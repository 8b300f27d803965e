"""Fixtures for end-to-end tests: a real API server started by the test, and the real clients users have
(kubectl 1.33 from the machine image, Debian's kubectl 1.20, the official `kubernetes` Python client).

A missing kubectl is a skip on a developer's machine and a failure under CI=true, like every other part
of the real substrate."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import unavailable
from tests.e2e.shared_cluster import cluster_namespace, workload_cluster  # noqa: F401 - the shared `up`
from tests.support.apiserver import Endpoint, running_server

KUBECTLS = {
    "1.33": "/usr/lib/google-cloud-sdk/bin/kubectl.1.33",
    "1.20": "/opt/slimkube/kubectl-1.20/usr/bin/kubectl",
}


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    """One API server (embedded SQLite) per test module, stopped at the module's end."""
    with running_server(str(tmp_path_factory.mktemp("apiserver")), bookmark_seconds=1.0) as endpoint:
        yield endpoint


@dataclass
class Kubectl:
    """A kubectl binary pointed at one server, with its own discovery cache (kubectl caches discovery
    under ~/.kube/cache by server URL, which a reused port would otherwise share between tests)."""

    binary: str
    kubeconfig: str
    cache_dir: str

    def run(self, *args: str, input: str | None = None, check: bool = True,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        command = [self.binary, f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.cache_dir}", *args]
        result = subprocess.run(command, input=input, capture_output=True, text=True, timeout=timeout,
                                env={**os.environ, "HOME": self.cache_dir})
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
        return result

    def popen(self, *args: str) -> subprocess.Popen[str]:
        command = [self.binary, f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.cache_dir}", *args]
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "HOME": self.cache_dir})


@pytest.fixture(params=sorted(KUBECTLS), ids=lambda v: f"kubectl{v}")
def kubectl(request: pytest.FixtureRequest, apiserver: Endpoint, tmp_path: Path) -> Kubectl:
    binary = KUBECTLS[request.param]
    if not os.access(binary, os.X_OK):
        unavailable(f"kubectl {request.param}", f"{binary} is missing (install.sh unpacks 1.20)")
    return Kubectl(binary, apiserver.kubeconfig, str(tmp_path / "kube-cache"))
