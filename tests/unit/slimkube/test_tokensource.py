"""Where the join token is read from (slimkube/tokensource.py): a file, the environment, or the deprecated
--token, exactly one of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from slimkube.tokensource import ARGV_WARNING, JoinSecret, TokenSourceError, resolve


def token_file(tmp_path: Path, text: str, mode: int = 0o600) -> str:
    path = tmp_path / "token"
    path.write_text(text)
    path.chmod(mode)
    return str(path)


def test_the_file_wins_over_the_environment_and_is_stripped(tmp_path: Path) -> None:
    path = token_file(tmp_path, "K10x::node:pw\n")
    assert resolve(token=None, token_file=path, environ={"SLIMKUBE_TOKEN": "other"}) == JoinSecret(
        token="K10x::node:pw", origin=f"--token-file {path}")


def test_the_environment_when_no_flag_is_given() -> None:
    assert resolve(token=None, token_file=None, environ={"SLIMKUBE_TOKEN": " K10x::node:pw\n"}) == JoinSecret(
        token="K10x::node:pw", origin="SLIMKUBE_TOKEN")


def test_the_deprecated_flag_works_and_says_why_not() -> None:
    secret = resolve(token="K10x::node:pw", token_file=None, environ={})
    assert secret == JoinSecret(token="K10x::node:pw", origin="--token", warnings=(ARGV_WARNING,))
    assert "ps" in ARGV_WARNING and "--token-file" in ARGV_WARNING


def test_nothing_given_is_none() -> None:
    assert resolve(token=None, token_file=None, environ={"SLIMKUBE_TOKEN": "  "}) is None


def test_a_file_others_can_read_is_used_with_a_warning(tmp_path: Path) -> None:
    path = token_file(tmp_path, "pw", mode=0o640)
    secret = resolve(token=None, token_file=path, environ={})
    assert secret is not None and secret.token == "pw"
    assert secret.warnings == (f"--token-file {path} is readable by others (mode 0640); chmod 600 it",)


@pytest.mark.parametrize("text, token, message", [
    pytest.param("\n", None, "is empty", id="empty-file"),
    pytest.param("pw", "pw", "not both", id="file-and-flag"),
    pytest.param(None, None, "cannot read", id="missing-file"),
])
def test_refusals_name_the_flag(tmp_path: Path, text: str | None, token: str | None, message: str) -> None:
    path = token_file(tmp_path, text) if text is not None else str(tmp_path / "absent")
    with pytest.raises(TokenSourceError, match=message) as caught:
        resolve(token=token, token_file=path, environ={})
    assert caught.value.flag == "--token-file"
