"""A throwaway etcd for tests and benchmarks: free 127.0.0.1 ports, data in a directory the caller owns,
stopped by PID and waited for on the way out (also when the start itself failed). Free of pytest so
`bench/` can start the same etcd the tests do; the tests decide whether a missing binary skips or fails."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

ETCD = "/usr/bin/etcd"  # Debian's etcd-server package, what ./install.sh installs


def etcd_binary() -> str | None:
    """The etcd to run, or None when none is installed."""
    return ETCD if os.access(ETCD, os.X_OK) else shutil.which("etcd")


def free_ports(n: int) -> list[int]:
    """n distinct free ports (sockets held open together so the kernel cannot hand one out twice)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _wait_healthy(proc: subprocess.Popen, endpoint: str, log_path: Path, timeout: float = 20) -> None:
    """Return once etcd answers healthy; RuntimeError with the log's tail if it exits or never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"etcd exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            if requests.get(f"{endpoint}/health", timeout=1).json().get("health") == "true":
                return
        except (requests.RequestException, ValueError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"etcd not healthy after {timeout} s:\n{log_path.read_text()[-3000:]}")


@contextmanager
def running_etcd(workdir: Path, binary: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """(client URL, process) of an etcd on free 127.0.0.1 ports, data in `workdir`; terminated by PID
    and waited for on the way out, whatever happened inside."""
    client_port, peer_port = free_ports(2)
    endpoint, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    log_path = workdir / "etcd.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [binary, "--name", "sktest", "--data-dir", str(workdir / "data"),
             "--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"sktest={peer}"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    try:
        _wait_healthy(proc, endpoint, log_path)
        yield endpoint, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
