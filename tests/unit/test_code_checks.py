"""ruff (lint) and mypy (types) over the tree, with the configuration in pyproject.toml, as part of the
test run: a finding fails the suite like a failing test, so CI enforces them without a separate step."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(tool: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_ruff_finds_nothing():
    result = _run("ruff", "check", "--no-cache", ".", timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing():
    result = _run("mypy", timeout=600)  # `files` in [tool.mypy]: the product packages
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_runs_in_strict_mode():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True


def test_test_module_basenames_are_unique():
    # pytest imports test modules by basename (rootdir-relative "prepend" mode, no __init__ in every folder):
    # two files of one name stop the whole suite at collection, which a run of one folder does not show.
    seen: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
