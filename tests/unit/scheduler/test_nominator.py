"""The nominator (control/scheduler/nominator.py), as upstream's nominator in scheduling_queue_test.go:
nominations by override, from status.nominatedNodeName, kept across an update that races the status write,
dropped on "" or delete, never for a bound pod."""

from __future__ import annotations

from control.scheduler.nominator import Nominator
from tests.support.scheduler_objects import make_pod


def nominated(name: str, node: str = "") -> dict:
    pod = make_pod(name)
    if node:
        pod["status"]["nominatedNodeName"] = node
    return pod


def pods_on(nominator: Nominator) -> dict[str, list[str]]:
    return {node: sorted(info.pod["metadata"]["name"] for info in infos)
            for node, infos in nominator.snapshot().items()}


def test_nominations_follow_overrides_status_and_deletes() -> None:
    n = Nominator()
    n.add(nominated("a", "n1"))  # from its status
    n.add(nominated("b"))  # none
    n.add(nominated("c"), "n1")  # override
    assert pods_on(n) == {"n1": ["a", "c"]}
    n.add(nominated("c"), "n2")
    assert pods_on(n) == {"n1": ["a"], "n2": ["c"]}
    n.add(nominated("a", "n1"), "")  # "" drops it
    n.delete(nominated("c"))
    assert pods_on(n) == {}


def test_an_update_without_a_nomination_keeps_the_one_made_in_memory() -> None:
    n = Nominator()
    n.add(nominated("a"), "n1")
    n.update(nominated("a"), nominated("a"))
    assert n.node_of(nominated("a")) == "n1"
    n.update(nominated("a"), nominated("a", "n2"))  # the status now says otherwise
    assert n.node_of(nominated("a")) == "n2"
    n.update(nominated("a", "n2"), nominated("a"))  # the status dropped it
    assert n.node_of(nominated("a")) is None


def test_a_bound_pod_is_never_nominated() -> None:
    n = Nominator()
    bound = make_pod("a", node_name="n1")
    n.add(bound, "n1")
    assert pods_on(n) == {}
