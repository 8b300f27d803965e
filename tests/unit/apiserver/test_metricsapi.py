"""metrics.k8s.io from the kubelets' Summaries (control/apiserver/registry/metricsapi.py): cpu rated over two scrapes
as metrics-server does (the kubelet's own rate when there is no earlier sample), quantities and windows as
metrics-server prints them, a pod only with every container, and scrapes reused within the resolution."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from control.apiserver.registry import metricsapi
from control.apiserver.registry.metricsapi import MetricsAPI, Usage, cpu_quantity, memory_quantity, pod_metrics, usages


def _summary(time: str, node_cpu: int, containers: dict[str, tuple[int, int, int | None]]) -> dict[str, Any]:
    """containers: name → (cumulative cpu ns, working set, kubelet's nanocores or None)."""
    def cpu(total: int, rate: int | None) -> dict[str, Any]:
        return {"time": time, "usageCoreNanoSeconds": total, **({"usageNanoCores": rate} if rate is not None else {})}

    return {"node": {"cpu": cpu(node_cpu, 7), "memory": {"time": time, "workingSetBytes": 2048}},
            "pods": [{"podRef": {"name": "web", "namespace": "ns"},
                      "containers": [{"name": n, "cpu": cpu(total, rate), "memory": {"workingSetBytes": ws}}
                                     for n, (total, ws, rate) in containers.items()]}]}


FIRST = _summary("2026-11-27T10:00:00Z", 10 ** 12, {"app": (10 ** 9, 4096, 111), "side": (0, 1000, 222)})
SECOND = _summary("2026-11-27T10:00:15Z", 10 ** 12 + 15 * 10 ** 9,
                  {"app": (10 ** 9 + 3 * 10 ** 9, 8192, 999), "side": (0, 1000, 333), "new": (5, 1, 444)})


def test_first_scrape_takes_the_kubelets_rates_with_the_first_window() -> None:
    found = usages(None, FIRST)
    assert found[("node",)] == Usage(7, 2048, "2026-11-27T10:00:00Z", metricsapi.FIRST_WINDOW)
    assert found[("pod", "ns", "web", "app")].nano_cores == 111


def test_later_scrapes_rate_the_counters_over_the_time_between() -> None:
    found = usages(FIRST, SECOND)
    assert found[("node",)] == Usage(1_000_000_000, 2048, "2026-11-27T10:00:15Z", 15.0)
    assert found[("pod", "ns", "web", "app")] == Usage(200_000_000, 8192, "2026-11-27T10:00:15Z", 15.0)
    assert found[("pod", "ns", "web", "side")].nano_cores == 0
    assert found[("pod", "ns", "web", "new")] == Usage(444, 1, "2026-11-27T10:00:15Z", 15.0)  # no earlier sample


def test_a_counter_that_went_back_takes_the_kubelets_rate() -> None:
    restarted = _summary("2026-11-27T10:00:30Z", 10 ** 12 + 30 * 10 ** 9, {"app": (5, 10, 123)})
    assert usages(SECOND, restarted)[("pod", "ns", "web", "app")].nano_cores == 123


def test_entries_without_cpu_or_memory_are_left_out() -> None:
    broken = _summary("2026-11-27T10:00:00Z", 1, {"app": (1, 1, None)})
    assert ("pod", "ns", "web", "app") not in usages(None, broken)


@pytest.mark.parametrize("size, text", [pytest.param(4096, "4Ki", id="kibibytes"),
                                        pytest.param(1000, "1000", id="plain"), pytest.param(0, "0Ki", id="zero")])
def test_memory_quantity(size: int, text: str) -> None:
    assert memory_quantity(size) == text


def test_pod_metrics_need_every_container() -> None:
    found = usages(FIRST, SECOND)
    pod = {"metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "app"}, {"name": "side"}]}}
    metrics = pod_metrics(pod, found, "now")
    assert metrics == {"kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
                       "metadata": {"name": "web", "namespace": "ns", "creationTimestamp": "now",
                                    "labels": {"app": "web"}},
                       "timestamp": "2026-11-27T10:00:15Z", "window": "15s",
                       "containers": [{"name": "app", "usage": {"cpu": "200000000n", "memory": "8Ki"}},
                                      {"name": "side", "usage": {"cpu": "0n", "memory": "1000"}}]}
    pod["spec"]["containers"].append({"name": "missing"})
    assert pod_metrics(pod, found, "now") is None
    assert cpu_quantity(5) == "5n"


class ScriptedAPI(MetricsAPI):
    """Scrapes answered from a list of summaries, counting them."""

    def __init__(self, answers: list[dict[str, Any] | None], clock: list[float]) -> None:
        super().__init__(None, None, clock=lambda: clock[0])  # type: ignore[arg-type]
        self.answers = answers
        self.fetches = 0

    async def _fetch(self, name: str) -> dict[str, Any] | None:
        self.fetches += 1
        return self.answers.pop(0)


def test_scrapes_are_reused_within_the_resolution_and_rated_against_the_last() -> None:
    clock = [0.0]
    api = ScriptedAPI([FIRST, SECOND, None], clock)

    async def scenario() -> None:
        first = await api._node_usages("n")
        assert first is not None and first[("node",)].window == metricsapi.FIRST_WINDOW
        clock[0] = 5.0
        assert await api._node_usages("n") is first and api.fetches == 1  # within 15 s: no new scrape
        clock[0] = 16.0
        second = await api._node_usages("n")
        assert second is not None and second[("node",)].nano_cores == 1_000_000_000 and api.fetches == 2
        clock[0] = 40.0
        assert await api._node_usages("n") is None  # the kubelet does not answer: the node is left out

    asyncio.run(scenario())
