"""The README and docs/ say only what is true of this tree: their commands run, their flags exist, their
links and paths lead somewhere.

- Every shell block says how it is run (tests/support/docs_blocks.py). `sh cli` blocks run here, from the
  repository root with this virtualenv's `bin`; `sh e2e` blocks run against a cluster in
  tests/e2e/test_docs_commands.py; `sh norun=ID` blocks cannot run on this machine, for the reason NOT_RUN
  gives, and NOT_RUN lists no reason nobody uses.
- Every `slimkube` flag written in the docs — in shell blocks (norun ones too), in inline code
  (`slimkube up --nodes N`) and in the command tables — is one the command's `--help` lists; every
  `install.sh` flag is one the script parses, and the daemon flags after its `--` are the role's command's.
- Every relative link reaches a file and, with `#anchor`, a heading of it; every repository path in inline
  code exists, and so does every module a package's row of the layout table in docs/architecture.md names.
- The README opens with the two commands a fresh machine runs, verbatim, and stays a first screen and a map.
- Every import-linter contract is described in docs/architecture.md, every controller `--disable` takes
  in docs/controllers.md, and every dependency in pyproject.toml in docs/dependencies.md with its reason.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from slimkube.cli import main
from slimkube.controlplane import known_components
from tests.support.docs_blocks import DOCS, MODES, ROOT, Block, all_blocks

BIN = Path(sys.executable).parent

# Blocks this machine cannot run, and why. Each is reviewed: what it shows is run elsewhere in the suite
# where it can be, with test-safe names and addresses.
NOT_RUN = {
    "first-screen": "`./install.sh && .venv/bin/slimkube up` runs until Ctrl-C on this host's fixed names "
                    "(cbr0, KUBE-* chains, port 6443) and `… python -m pytest` is this very suite: .ci/run "
                    "runs the pair as written, and tests/e2e/test_up_down.py runs `up` as a user does",
    "suite": "pytest runs of this suite (or part of it) from inside it",
    "multinode": "its own `up --nodes 3` on this host's fixed names cannot run beside the shared e2e cluster; "
                 "tests/e2e/test_multinode.py runs the same commands with test-safe names",
    "systemd-hosts": "installs and starts systemd units on hosts of one's own (systemd is not PID 1 here); "
                     "tests/integration/test_systemd_units.py runs `install.sh --role … --units-only` into "
                     "temporary dirs and tests/e2e/test_provision_worker.py runs a worker's units",
    "vagrant": "needs a hypervisor and boots VMs; tests/unit/test_vagrantfile.py runs `vagrant validate` "
               "and checks the provisioning calls' flags",
}

SUBCOMMANDS = ("server", "agent", "proxy", "up", "down", "node", "images", "version")
FLAG = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*")
SPAN = re.compile(r"`([^`]+)`")


@functools.cache
def help_flags(command: tuple[str, ...]) -> set[str]:
    """The flags `slimkube COMMAND --help` lists."""
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return set(FLAG.findall(result.output)) | {"--help"}


def install_flags() -> set[str]:
    script = (ROOT / "install.sh").read_text()
    return set(re.findall(r"^\s+(?:-h\|)?(--[a-z-]+)\)", script, re.M))


def _prose(path: Path) -> str:
    """The text of `path` outside its fenced blocks."""
    return re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)


def _tokens(text: str) -> list[str]:
    return [token.strip("[](),;`'\"") for token in text.split()]


def invocations(text: str) -> list[tuple[tuple[str, ...], str]]:
    """(command, flag) for every flag given to `slimkube` or `install.sh` in `text` (one command line)."""
    found: list[tuple[tuple[str, ...], str]] = []
    tokens = _tokens(text)
    for index, token in enumerate(tokens):
        rest = tokens[index + 1:]
        if token.endswith("slimkube") and rest and rest[0] in SUBCOMMANDS:
            verb = rest[1].split("|")[0] if rest[0] == "node" and len(rest) > 1 else ""
            command = ("node", verb) if verb in ("stop", "start") else (rest[0],)
            found += [(command, flag) for part in rest[len(command):] for flag in FLAG.findall(part.split("=")[0])]
        elif token.endswith("install.sh"):
            before, _, after = " ".join(rest).partition(" -- ")
            found += [(("install.sh",), flag) for flag in FLAG.findall(before)]
            role = re.search(r"--role (server|agent)", before)
            if role and after:
                found += [((role.group(1),), flag) for flag in FLAG.findall(after)]
    return found


def documented_flags() -> list[tuple[str, tuple[str, ...], str]]:
    """(where, command, flag) for every flag the docs give a command: shell blocks, inline code, tables."""
    found: list[tuple[str, tuple[str, ...], str]] = []
    for block in all_blocks():
        for command in block.commands():
            for segment in re.split(r"\s(?:&&|\|\||;|\|)\s", command):
                found += [(block.id, *pair) for pair in invocations(segment)]
    for path in DOCS:
        for number, line in enumerate(_prose(path).splitlines(), 1):
            where = f"{path.relative_to(ROOT)} (prose line {number})"
            row = re.match(r"\| `slimkube ([a-z]+(?: (?:stop|start))?)", line)
            if row:
                command = tuple(row.group(1).split())
                found += [(where, command, flag) for flag in FLAG.findall(line)]
        for span in SPAN.findall(_prose(path).replace("\n", " ")):
            found += [(f"{path.relative_to(ROOT)}: `{span}`", *pair) for pair in invocations(span)]
    return found


@pytest.mark.parametrize("block", all_blocks(), ids=lambda block: block.id)
def test_every_shell_block_says_how_it_runs(block: Block):
    assert block.mode in MODES, f"{block.id}: ```{block.info}: say `sh cli`, `sh e2e` or `sh norun=ID`"
    if block.mode == "norun":
        assert block.norun_id in NOT_RUN, f"{block.id}: norun={block.norun_id} has no reason in NOT_RUN"


def test_every_reason_not_to_run_is_used():
    used = {block.norun_id for block in all_blocks()}
    assert set(NOT_RUN) <= used, f"reasons no block uses: {sorted(set(NOT_RUN) - used)}"


@pytest.mark.parametrize("block", [b for b in all_blocks() if b.mode == "cli"], ids=lambda block: block.id)
def test_cli_blocks_run(block: Block):
    script = block.text.replace(".venv/bin/", f"{BIN}/")
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=ROOT, capture_output=True, text=True,
                            timeout=180, env={**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"})
    assert result.returncode == 0, f"{block.id} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), f"{block.id} printed nothing"


def test_documented_flags_exist():
    flags = documented_flags()
    assert len(flags) > 100, "the docs name fewer flags than they do: is the extraction broken?"
    install = install_flags() | {"--help"}
    unknown = [f"{where}: {' '.join(command)} {flag}" for where, command, flag in flags
               if flag not in (install if command == ("install.sh",) else help_flags(command))]
    assert not unknown, "flags the command does not have:\n" + "\n".join(unknown)


def test_a_wrong_flag_is_caught():
    """The extraction sees flags where the docs put them, so a renamed flag fails the test above."""
    assert invocations(".venv/bin/slimkube up --nodes 3 --no-such-flag=1") == [(("up",), "--nodes"),
                                                                               (("up",), "--no-such-flag")]
    assert invocations("./install.sh --role agent --server URL --token T -- --node-ip 10.0.0.11") == [
        (("install.sh",), "--role"), (("install.sh",), "--server"), (("install.sh",), "--token"),
        (("agent",), "--node-ip")]
    assert "--no-such-flag" not in help_flags(("up",))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(line.lstrip("#")) for line in _prose(path).splitlines() if line.startswith("#")}


def test_links_reach_files_and_headings():
    broken = []
    for path in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", _prose(path)):
            if re.match(r"[a-z]+://", target):
                continue
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            if not resolved.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and anchor not in _anchors(resolved):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


TOP = ("slimkube", "control", "nodeagent", "proxy", "clusterdns", "tests", "bench", "systemd", "vagrant", "docs")


def test_paths_in_inline_code_exist():
    missing = []
    for path in DOCS:
        for span in SPAN.findall(_prose(path)):
            is_path = re.fullmatch(rf"(?:{'|'.join(TOP)})/[\w./-]*", span)
            made_at_run_time = "/." in span  # e.g. vagrant/.node-token, which the server VM writes
            if is_path and not made_at_run_time and not (ROOT / span).exists():
                missing.append(f"{path.relative_to(ROOT)}: `{span}`")
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)


def test_modules_named_in_the_layout_table_exist():
    """A row of docs/architecture.md's table names its package (and any other folder) by its path, and its
    modules and subpackages relative to it (`server.py`, `strategies/`, `network/hostport.py`): each must
    be found under one of the row's folders."""
    missing = []
    for line in (ROOT / "docs" / "architecture.md").read_text().splitlines():
        cells = line.split("|")
        if len(cells) < 4 or not cells[1].strip().startswith("`"):
            continue
        packages = [ROOT / span for span in SPAN.findall(line) if span.endswith("/") and span.startswith(TOP)]
        for span in SPAN.findall("|".join(cells[2:])):
            if not re.fullmatch(r"[\w*./-]+\.(?:py|c)|[\w-]+/|[\w-]+/[\w./-]+", span) or span.startswith(TOP):
                continue
            if packages and not any(any(package.rglob(span.rstrip("/"))) for package in packages):
                missing.append(f"{cells[1].strip()}: `{span}`")
    assert not missing, "modules the layout table names that are not there:\n" + "\n".join(missing)


def test_readme_opens_with_the_two_commands_and_stays_a_map():
    readme = (ROOT / "README.md").read_text()
    first_screen = "\n".join(readme.splitlines()[:25])
    assert "./install.sh && .venv/bin/slimkube up\n" in first_screen
    assert "./install.sh && .venv/bin/python -m pytest\n" in first_screen
    assert ".venv/bin/python -m pytest" in (ROOT / ".ci" / "run").read_text()
    assert len(readme.splitlines()) <= 250, "the README is a first screen and a map: the rest goes in docs/"


def test_every_disable_name_is_documented():
    """`--disable NAME` takes the scheduler's and every controller's name: docs/controllers.md lists them all."""
    page = (ROOT / "docs" / "controllers.md").read_text()
    missing = [name for name in known_components() if name != "scheduler" and f"`{name}`" not in page]
    assert not missing, f"controllers docs/controllers.md does not list: {missing}"


def test_every_import_contract_is_described():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    page = (ROOT / "docs" / "architecture.md").read_text()
    missing = [contract["id"] for contract in contracts if f"`{contract['id']}`" not in page]
    assert not missing, f"import-linter contracts docs/architecture.md does not describe: {missing}"


def test_every_dependency_has_its_reason():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = (ROOT / "docs" / "dependencies.md").read_text().lower()
    names = [re.split(r"[<>=\[ ]", requirement, maxsplit=1)[0].lower()
             for requirement in project["dependencies"] + project["optional-dependencies"]["test"]]
    missing = [name for name in names if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", listed)]
    assert not missing, f"dependencies docs/dependencies.md does not explain: {missing}"
