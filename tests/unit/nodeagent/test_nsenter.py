"""call_in_netns without root: the namespace of this very thread (always enterable by its owner) and the
error paths; entering another namespace is covered by the pod network integration tests."""

from __future__ import annotations

import os
import threading

import pytest

from nodeagent.network.nsenter import call_in_netns

OWN = f"/proc/{os.getpid()}/task/{threading.get_native_id()}/ns/net"


def test_the_result_comes_back_and_the_call_ran_on_another_thread():
    caller = threading.get_ident()
    assert call_in_netns(OWN, lambda: threading.get_ident() != caller) is True


def test_the_callables_exception_is_raised_in_the_caller():
    def boom() -> None:
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        call_in_netns(OWN, boom)


def test_a_missing_namespace_is_an_os_error():
    with pytest.raises(FileNotFoundError):
        call_in_netns("/proc/0/ns/net", lambda: None)
