"""The repository stands alone: no docstring, comment or page cites a document a reader of the repository
cannot open — the design notes, recipes and style guide the work started from, the numbered seed
documents, or the project's numbered issues. Such a reference says the fact instead, or points to
`docs/`. (Upstream Kubernetes issues are public: cite them as `kubernetes/kubernetes#N`.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("slimkube", "control", "nodeagent", "proxy", "clusterdns", "tests", "bench", "systemd", "vagrant",
           "docs", ".ci", "README.md", "install.sh", "pyproject.toml")
SKIPPED_DIRS = {"__pycache__"}  # caches
# This file is not checked: its table below spells the references out on purpose.

UNREADABLE = re.compile("|".join([
    r"\bshared/(?:DESIGN|RECIPES|STYLE)\b",
    r"\b(?:DESIGN|RECIPES|STYLE)\.md\b",
    r"\bseeds?[\s-]+0\d\d\b",
    r"\bthe seeds?\b",
    r"(?<![\w/#])issues?\s+#?\d+",
]), re.IGNORECASE)


def checked_files() -> list[Path]:
    files: list[Path] = []
    for name in CHECKED:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        files += [p for p in candidates
                  if not SKIPPED_DIRS & set(p.relative_to(ROOT).parts) and p != Path(__file__).resolve()]
    return files


def unreadable_references(text: str) -> list[tuple[int, str]]:
    return [(text.count("\n", 0, match.start()) + 1, match.group(0)) for match in UNREADABLE.finditer(text)]


def test_no_file_cites_a_document_outside_the_repository():
    found = []
    for path in checked_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:  # binary (images, archives): nothing to read
            continue
        found += [f"{path.relative_to(ROOT)}:{line}: {match!r}" for line, match in unreadable_references(text)]
    assert not found, "references a reader cannot follow (state the fact, or point to docs/):\n" + "\n".join(found)


@pytest.mark.parametrize("text,found", [
    pytest.param("as shared/DESIGN.md says", ["shared/DESIGN"], id="design-path"),
    pytest.param("(RECIPES.md \"Safety net\")", ["RECIPES.md"], id="recipes"),
    pytest.param("seed 004 §3.1", ["seed 004"], id="seed"),
    pytest.param("Seed\n000: HostName", ["Seed\n000"], id="seed-wrapped"),
    pytest.param("with seed-004 guarantees", ["seed-004"], id="seed-hyphen"),
    pytest.param("as the seed says", ["the seed"], id="the-seed"),
    pytest.param("(issue 13 item 2)", ["issue 13"], id="issue"),
    pytest.param("Goals (issue\n14):", ["issue\n14"], id="issue-wrapped"),
    pytest.param("kubernetes/kubernetes#99425", [], id="upstream-issue"),
    pytest.param("random.Random(seed)", [], id="random-seed"),
    pytest.param("an issue with the node", [], id="prose"),
])
def test_what_counts_as_unreadable(text: str, found: list[str]):
    assert [match for _, match in unreadable_references(text)] == found
