"""The shell blocks of README.md and docs/*.md, as the docs tests run them.

A fenced block whose info string starts with `sh` says how it is run:
- `sh cli` — runnable anywhere from the repository root, no root, no cluster (tests/unit/test_docs_cli_blocks.py);
- `sh e2e` — kubectl and curl against a running cluster, with `KUBECONFIG` and `DIR` (the server's data dir)
  set, in a namespace of its own (tests/e2e/test_docs_commands.py, on the shared `up --nodes 3`);
- `sh norun=ID` — not runnable on this machine; `NOT_RUN` in tests/unit/test_docs_cli_blocks.py gives each ID's
  reason. Their `slimkube` and `install.sh` flags are still checked against the real command lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
MODES = ("cli", "e2e", "norun")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    info: str  # the fence's info string, e.g. "sh e2e"
    text: str

    @property
    def mode(self) -> str:
        """`cli`, `e2e`, `norun`, or what the info string says instead (a test refuses anything else)."""
        words = self.info.split()
        return words[1].split("=", 1)[0] if len(words) == 2 else self.info

    @property
    def norun_id(self) -> str | None:
        words = self.info.split()
        return words[1].split("=", 1)[1] if len(words) == 2 and words[1].startswith("norun=") else None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def commands(self) -> list[str]:
        """The block's commands: continuation lines joined, comments and blank lines dropped."""
        joined = re.sub(r"\\\n\s*", " ", self.text)
        return [line.split(" #", 1)[0].strip() for line in joined.splitlines()
                if line.strip() and not line.lstrip().startswith("#")]


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of `path` whose info string starts with `sh` (the shell blocks)."""
    blocks: list[Block] = []
    opened: tuple[int, str] | None = None
    body: list[str] = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if opened is None and line.startswith("```"):
            opened, body = (number, line[3:].strip()), []
        elif opened is not None and line.strip() == "```":
            if opened[1].split()[:1] == ["sh"]:
                blocks.append(Block(path, opened[0], opened[1], "\n".join(body) + "\n"))
            opened = None
        elif opened is not None:
            body.append(line)
    assert opened is None, f"{path}:{opened[0]}: a fence is never closed"
    return blocks


def all_blocks() -> list[Block]:
    return [block for path in DOCS for block in fenced_blocks(path)]
