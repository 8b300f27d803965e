"""The pod-holds rule (control/api/podresources.py) the scheduler and ResourceQuota share."""

from __future__ import annotations

import operator

import pytest

from control.api.podresources import containers, pod_total


def spec(app: list[int], init: list[int]) -> dict:
    return {"containers": [{"n": n} for n in app], "initContainers": [{"n": n} for n in init]}


@pytest.mark.parametrize(("app", "init", "total"), [
    pytest.param([1, 2], [], 3, id="app-containers-add-up"),
    pytest.param([1, 2], [2], 3, id="init-smaller-than-the-sum"),
    pytest.param([1, 2], [5, 4], 5, id="largest-init-wins"),
    pytest.param([], [4], 4, id="only-init"),
    pytest.param([], [], 0, id="nothing"),
])
def test_pod_total(app: list[int], init: list[int], total: int) -> None:
    assert pod_total(spec(app, init), lambda c: c["n"], zero=0, add=operator.add, larger=max) == total


def test_containers_skips_what_is_not_an_object() -> None:
    assert containers({"containers": [{"name": "a"}, "junk", None]}, "containers") == [{"name": "a"}]
    assert containers({"containers": "junk"}, "containers") == []
