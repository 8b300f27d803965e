"""control/util/sdnotify.py against a datagram socket the test binds (no root, no systemd): a path and an
abstract name both receive the state; no variable, an unusable value or nobody listening send nothing and
never raise."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from control.util.sdnotify import READY, STOPPING, notify, socket_address


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.settimeout(5)
    try:
        yield sock
    finally:
        sock.close()


def test_a_path_socket_receives_each_state(listener: socket.socket, tmp_path: Path) -> None:
    path = str(tmp_path / "notify.sock")
    listener.bind(path)
    assert notify(READY, environ={"NOTIFY_SOCKET": path})
    assert notify(f"{STOPPING}\nSTATUS=bye", environ={"NOTIFY_SOCKET": path})
    assert listener.recv(4096) == b"READY=1"
    assert listener.recv(4096) == b"STOPPING=1\nSTATUS=bye"


def test_an_abstract_name_is_the_at_sign_as_a_nul_byte(listener: socket.socket) -> None:
    name = f"sktest-notify-{os.getpid()}"
    listener.bind(b"\0" + name.encode())
    assert notify(READY, environ={"NOTIFY_SOCKET": f"@{name}"})
    assert listener.recv(4096) == b"READY=1"


def test_the_process_environment_is_read_when_none_is_given(listener: socket.socket, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "notify.sock")
    listener.bind(path)
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    assert notify(READY)
    assert listener.recv(4096) == b"READY=1"


@pytest.mark.parametrize("environ", [
    pytest.param({}, id="unset"),
    pytest.param({"NOTIFY_SOCKET": ""}, id="empty"),
    pytest.param({"NOTIFY_SOCKET": "relative/notify.sock"}, id="relative path"),
    pytest.param({"NOTIFY_SOCKET": "vsock:2:1234"}, id="vsock"),
])
def test_nothing_is_sent_without_a_usable_socket(environ: dict[str, str]) -> None:
    assert notify(READY, environ=environ) is False


def test_nobody_listening_is_reported_not_raised(tmp_path: Path) -> None:
    assert notify(READY, environ={"NOTIFY_SOCKET": str(tmp_path / "absent.sock")}) is False


@pytest.mark.parametrize(("value", "address"), [
    pytest.param("/run/systemd/notify", "/run/systemd/notify", id="path"),
    pytest.param("@sk/notify", b"\0sk/notify", id="abstract"),
    pytest.param("notify", None, id="relative"),
])
def test_socket_address(value: str, address: str | bytes | None) -> None:
    assert socket_address(value) == address
