"""The README's and docs/' `sh e2e` blocks, run as written against the shared `up --nodes 3`
(tests/e2e/shared_cluster.py) with the real kubectl 1.33 as `kubectl` (the README's also with 1.20).

Each block runs in bash with `set -euo pipefail`, in a namespace of its own (the kubeconfig's context
names it, so the block's plain `kubectl` commands land there), with `KUBECONFIG` and `DIR` (the cluster's
data dir) set, as a reader who exported them would run it. A block leaves no cluster-scoped object behind
(the docs' examples delete what they create); the namespace goes at the test's end.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import unavailable
from tests.e2e.conftest import KUBECTLS
from tests.e2e.shared_cluster import RunningCluster
from tests.support.docs_blocks import Block, all_blocks

pytestmark = pytest.mark.timeout(360)


def _kubeconfig_in(namespace: str, kubeconfig: str, path: Path) -> Path:
    config = yaml.safe_load(Path(kubeconfig).read_text())
    for context in config["contexts"]:
        context["context"]["namespace"] = namespace
    path.write_text(yaml.safe_dump(config))
    return path


def _runs() -> list[tuple[Block, str]]:
    """Every e2e block with kubectl 1.33; the README's also with 1.20, the oldest kubectl it promises."""
    return [(block, version) for block in all_blocks() if block.mode == "e2e"
            for version in (("1.33", "1.20") if block.path.name == "README.md" else ("1.33",))]


@pytest.mark.parametrize("block,version", _runs(), ids=lambda value: value.id if isinstance(value, Block) else value)
def test_e2e_blocks_run(block: Block, version: str, workload_cluster: RunningCluster, cluster_namespace: str,
                        tmp_path: Path):
    binaries = tmp_path / "bin"
    binaries.mkdir()
    kubectl = KUBECTLS[version]
    if not os.access(kubectl, os.X_OK):
        unavailable(f"kubectl {version}", f"{kubectl} is missing")
    (binaries / "kubectl").symlink_to(kubectl)
    env = {**os.environ, "PATH": f"{binaries}:{os.environ['PATH']}", "HOME": str(tmp_path),
           "KUBECONFIG": str(_kubeconfig_in(cluster_namespace, workload_cluster.kubeconfig, tmp_path / "kubeconfig")),
           "DIR": workload_cluster.data_dir}
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block.text], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{block.id} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
