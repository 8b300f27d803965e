"""The layer contracts of pyproject.toml's [tool.importlinter] hold for the tree, and a forbidden import
breaks them: composition root (slimkube) → components (API server, controllers, kubelet, proxy; none
importing another, only the API server reaching storage) → shared base (client, api, apimachinery, util).

The negative cases run import-linter over a copy of the packages with one import added, so the test
shows the contracts are live, not just that today's tree happens to pass.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("slimkube", "control", "nodeagent", "proxy", "clusterdns")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """Run lint-imports in `tree`; it reads the pyproject.toml there and imports the packages from there."""
    command = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(command), "--no-cache"], cwd=tree, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin"}, check=False)


def test_the_tree_keeps_every_contract():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.fixture
def copy_of_tree(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


@pytest.mark.parametrize("module,added,message", [
    pytest.param("proxy/model.py", "from nodeagent import pleg", "proxy is not allowed to import nodeagent",
                 id="component-imports-component"),
    pytest.param("clusterdns/records.py", "import nodeagent.pleg", "clusterdns is not allowed to import nodeagent",
                 id="dns-imports-kubelet"),
    pytest.param("nodeagent/pleg.py", "import control.apiserver.registry",
                 "nodeagent is not allowed to import control.apiserver", id="kubelet-imports-apiserver"),
    pytest.param("control/client/rest.py", "from control.controllers import manager",
                 "control.client is not allowed to import control.controllers", id="base-imports-component"),
    pytest.param("control/apiserver/status.py", "import slimkube.cli",
                 "control.apiserver is not allowed to import slimkube", id="component-imports-root"),
    pytest.param("control/apimachinery/labels.py", "import control.client.rest",
                 "control.apimachinery is not allowed to import control.client", id="base-imports-upward"),
    pytest.param("control/controllers/manager.py", "from control.storage import sqlite",
                 "control.controllers is not allowed to import control.storage", id="controller-reads-store"),
    pytest.param("control/controllers/daemonset/decisions.py", "from control.controllers.deployment import util",
                 "control.controllers.daemonset is not allowed to import control.controllers.deployment",
                 id="controller-imports-controller"),
    pytest.param("control/controllers/ttlafterfinished/controller.py",
                 "import control.controllers.garbagecollector.graph",
                 "control.controllers.ttlafterfinished is not allowed to import control.controllers.garbagecollector",
                 id="last-controller-imports-controller"),
    pytest.param("control/controllers/shared/history.py", "from control.controllers.deployment import util",
                 "control.controllers.shared is not allowed to import control.controllers.deployment",
                 id="shared-imports-controller"),
])
def test_a_forbidden_import_breaks_a_contract(copy_of_tree: Path, module: str, added: str, message: str):
    target = copy_of_tree / module
    target.write_text(target.read_text() + f"\n{added}\n")
    result = _lint_imports(copy_of_tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert message in " ".join(result.stdout.split())  # lint-imports wraps long lines
