"""The server identity leader election campaigns with, and the --leader-elect* flags' checks."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from slimkube.cli import main
from slimkube.leadership import server_identity


def test_identity_is_hostname_and_an_id_kept_in_the_data_dir(tmp_path):
    first = server_identity(str(tmp_path / "a"))
    assert first.startswith(socket.gethostname() + "_")
    assert server_identity(str(tmp_path / "a")) == first  # a restart renews its own Lease
    assert (tmp_path / "a" / "server-id").read_text().strip() == first.rsplit("_", 1)[1]
    assert server_identity(str(tmp_path / "b")) != first  # another server, another candidate


@pytest.mark.parametrize("args,message", [
    pytest.param(["--leader-elect-lease-duration", "10s"], "lease_duration must be greater than renew_deadline",
                 id="lease-not-longer-than-deadline"),
    pytest.param(["--leader-elect-retry-period", "9s"], "renew_deadline must be greater than retry_period",
                 id="no-room-to-retry"),
    pytest.param(["--leader-elect-renew-deadline", "soon"], "expected a duration", id="not-a-duration"),
])
def test_server_refuses_timings_the_elector_cannot_keep(tmp_path, args, message):
    result = CliRunner().invoke(main, ["server", "--data-dir", str(tmp_path), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert list(tmp_path.iterdir()) == []  # refused before anything started
