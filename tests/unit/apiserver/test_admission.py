"""Namespace lifecycle and quota admission (control/apiserver/admission/) and the chain's order: which
creates a quota serialises, per namespace, and that a quota is never exceeded under concurrent creates through
the real registry."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import pytest

from control.apiserver.admission.chain import Attributes, Chain, Operation
from control.apiserver.admission.lifecycle import check_delete, check_namespace
from control.apiserver.admission.quota import QuotaAdmission
from control.apiserver.registry.store import DeleteOptions, Registry
from control.apiserver.resources import Resource, by_path
from control.apiserver.status import APIError
from control.storage.sqlite import SQLiteStorage

PODS = by_path("", "v1", "pods")
CONFIGMAPS = by_path("", "v1", "configmaps")
NAMESPACES = by_path("", "v1", "namespaces")
QUOTAS = by_path("", "v1", "resourcequotas")
SERVICE_ACCOUNTS = by_path("", "v1", "serviceaccounts")
WAIT = 5.0


class DictReader:
    """admission.chain.Reader over {(plural, namespace): [objects]}; `add` is what a create's write does."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def add(self, resource: Resource, namespace: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self.objects.setdefault((resource.plural, namespace), []).append(obj)

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        return next((o for o in self.list_all(resource, namespace) if o["metadata"]["name"] == name), None)

    def list_all(self, resource: Resource, namespace: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.objects.get((resource.plural, namespace), []))


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}


def quota(**hard: str) -> dict[str, Any]:
    return {"metadata": {"name": "q"}, "spec": {"hard": hard}}


def _both_inside(reader: DictReader, resource: Resource, objs: list[dict[str, Any]], *, namespaces: list[str]) -> bool:
    """Whether two creates can be inside `admit` at once (not serialised)."""
    quota_admission = QuotaAdmission(reader)
    barrier = threading.Barrier(2, timeout=0.5)

    def create(index: int) -> bool:
        with quota_admission.admit(resource, namespaces[index], objs[index]):
            try:
                barrier.wait()
                return True
            except threading.BrokenBarrierError:
                return False

    with ThreadPoolExecutor(2) as pool:
        return all(pool.map(create, range(2)))


@pytest.mark.parametrize("quotas,resource,objs", [
    pytest.param({}, PODS, [pod("a"), pod("b")], id="no-quota"),
    pytest.param({"ns": [quota(services="1")]}, PODS, [pod("a"), pod("b")], id="quota-counts-other-kinds"),
    pytest.param({"ns": [quota(pods="5")]}, CONFIGMAPS, [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}],
                 id="configmaps-under-a-pod-quota"),
    pytest.param({"ns": [quota(**{"requests.cpu": "1"}), ]}, QUOTAS, [quota(pods="1"), quota(pods="2")],
                 id="quotas-themselves"),
])
def test_creates_no_quota_counts_are_not_serialised(quotas, resource, objs):
    reader = DictReader()
    for namespace, items in quotas.items():
        for item in items:
            reader.add(QUOTAS, namespace, item)
    assert _both_inside(reader, resource, objs, namespaces=["ns", "ns"])


def test_counted_creates_in_different_namespaces_are_not_serialised():
    reader = DictReader()
    reader.add(QUOTAS, "one", quota(pods="5"))
    reader.add(QUOTAS, "two", quota(pods="5"))
    assert _both_inside(reader, PODS, [pod("a"), pod("b")], namespaces=["one", "two"])


def test_counted_creates_in_one_namespace_are_serialised_and_see_each_others_write():
    reader = DictReader()
    reader.add(QUOTAS, "ns", quota(pods="1"))
    quota_admission = QuotaAdmission(reader)
    first_inside, release_first = threading.Event(), threading.Event()
    second_inside = threading.Event()

    def first() -> None:
        with quota_admission.admit(PODS, "ns", pod("a")):
            first_inside.set()
            assert release_first.wait(WAIT)
            reader.add(PODS, "ns", pod("a"))  # the write, still inside

    def second() -> None:
        with quota_admission.admit(PODS, "ns", pod("b")):
            second_inside.set()

    with ThreadPoolExecutor(2) as pool:
        done_first = pool.submit(first)
        assert first_inside.wait(WAIT)
        done_second = pool.submit(second)
        assert not second_inside.wait(0.3)  # held back while the first create is admitted
        release_first.set()
        done_first.result(WAIT)
        with pytest.raises(APIError) as refused:
            done_second.result(WAIT)
    assert refused.value.code == 403 and "exceeded quota: q" in refused.value.message
    assert not second_inside.is_set()


def test_namespace_lock_is_dropped_when_unused():
    reader = DictReader()
    reader.add(QUOTAS, "ns", quota(pods="5"))
    quota_admission = QuotaAdmission(reader)
    with quota_admission.admit(PODS, "ns", pod("a")):
        assert len(quota_admission._locks) == 1
    assert len(quota_admission._locks) == 0


def test_quota_is_never_exceeded_by_concurrent_creates(tmp_path):
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        registry = Registry(storage)
        registry.create(NAMESPACES, "", {"metadata": {"name": "ns"}})
        registry.create(SERVICE_ACCOUNTS, "ns", {"metadata": {"name": "default"}})  # the controller's
        registry.create(QUOTAS, "ns", quota(pods="3"))

        def create(index: int) -> int:
            try:
                registry.create(PODS, "ns", pod(f"p{index}"))
                return 201
            except APIError as exc:
                return exc.code

        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(create, range(16)))
        assert sorted(codes) == [201] * 3 + [403] * 13
        assert len(registry.list_all(PODS, "ns")) == 3
    finally:
        storage.close()


def test_create_in_missing_or_terminating_namespace_is_refused():
    reader = DictReader()
    reader.add(NAMESPACES, "", {"metadata": {"name": "going", "deletionTimestamp": "t"},
                                "status": {"phase": "Terminating"}})
    with pytest.raises(APIError) as missing:
        check_namespace(reader, PODS, "absent", "p")
    assert missing.value.code == 404
    with pytest.raises(APIError) as terminating:
        check_namespace(reader, PODS, "going", "p")
    assert terminating.value.code == 403
    assert terminating.value.details["causes"][0]["reason"] == "NamespaceTerminating"


PRIORITY_CLASSES = by_path("scheduling.k8s.io", "v1", "priorityclasses")


def test_priority_admission_through_the_registry(tmp_path):
    from control.apiserver.controlplane.bootstrap import bootstrap
    from control.apiserver.registry.store import DeleteOptions

    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        registry = Registry(storage)
        bootstrap(registry, api_port=6443)
        system = {o["metadata"]["name"]: (o["value"], o["preemptionPolicy"])
                  for o in registry.list_all(PRIORITY_CLASSES, "")}
        assert system == {"system-cluster-critical": (2000000000, "PreemptLowerPriority"),
                          "system-node-critical": (2000001000, "PreemptLowerPriority")}
        registry.create(NAMESPACES, "", {"metadata": {"name": "ns"}})
        registry.create(SERVICE_ACCOUNTS, "ns", {"metadata": {"name": "default"}})  # the controller's
        with pytest.raises(APIError) as refused:
            registry.create(PODS, "ns", {**pod("p"), "spec": {**pod("p")["spec"], "priorityClassName": "nope"}})
        assert (refused.value.code, refused.value.reason, refused.value.message) == \
            (403, "Forbidden", 'pods "p" is forbidden: no PriorityClass with name nope was found')
        registry.create(PRIORITY_CLASSES, "", {"metadata": {"name": "batch"}, "value": -5, "globalDefault": True})
        created = registry.create(PODS, "ns", pod("q"))
        assert (created["spec"]["priorityClassName"], created["spec"]["priority"],
                created["spec"]["preemptionPolicy"]) == ("batch", -5, "PreemptLowerPriority")
        with pytest.raises(APIError) as second:
            registry.create(PRIORITY_CLASSES, "", {"metadata": {"name": "other"}, "value": 1, "globalDefault": True})
        assert second.value.message == ('priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass batch '
                                        'is already marked as default. Only one default can exist')
        with pytest.raises(APIError) as undeletable:
            registry.delete(PRIORITY_CLASSES, "", "system-node-critical", DeleteOptions())
        assert (undeletable.value.code, undeletable.value.message) == \
            (403, 'priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority '
                  'class and cannot be deleted')
        assert registry.delete(PRIORITY_CLASSES, "", "batch", DeleteOptions())[1]
        # an update written back without priority keeps it (upstream's admitPod on update)
        stored = registry.get(PODS, "ns", "q")
        del stored["spec"]["priority"]
        updated, _ = registry.update(PODS, "ns", "q", stored)
        assert updated["spec"]["priority"] == -5
    finally:
        storage.close()


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_immortal_namespaces_may_not_be_deleted(name):
    with pytest.raises(APIError) as caught:
        check_delete(NAMESPACES, name)
    assert caught.value.code == 403
    assert caught.value.message == f'namespaces "{name}" is forbidden: this namespace may not be deleted'


def test_other_deletes_pass():
    check_delete(NAMESPACES, "kube-node-lease")
    check_delete(CONFIGMAPS, "default")


class Recording:
    """A plugin for both phases that records what it saw, to check the chain's order from outside."""

    def __init__(self, name: str, seen: list[tuple[str, str, str]]) -> None:
        self.name, self._seen = name, seen

    def admit(self, attributes: Attributes) -> None:
        self._seen.append((self.name, attributes.operation.value, attributes.resource.plural))

    def validate(self, attributes: Attributes, hold: ExitStack) -> None:
        self._seen.append((self.name, attributes.operation.value, attributes.resource.plural))
        hold.callback(self._seen.append, (f"{self.name} released", attributes.operation.value,
                                          attributes.resource.plural))


def test_the_registry_enters_one_ordered_chain_once_per_write(tmp_path):
    """Mutating plugins, then the strategy's prepare step, then validation (the kind's first), then the write;
    what a validating plugin holds is released after the write."""
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        registry = Registry(storage)
        names = [type(p).__name__ for p in registry.admission.mutating]
        assert names == ["NamespaceLifecycle", "LimitRangerDefaults", "ServiceAccount", "TaintNodesByCondition",
                         "PodPriority", "DefaultStorageClass", "MutatingWebhooks"]
        names = [type(p).__name__ for p in registry.admission.validating]
        assert names == ["StrategyValidation", "LimitRangerBounds", "NodeRestriction", "PodSecurity",
                         "OneGlobalDefault", "ValidatingAdmissionPolicies", "ValidatingWebhooks", "QuotaAdmission"]
        seen: list[tuple[str, str, str]] = []
        registry.admission = Chain(
            mutating=[*registry.admission.mutating, Recording("mutating", seen)],
            validating=[Recording("validating", seen), *registry.admission.validating])
        registry.create(NAMESPACES, "", {"metadata": {"name": "ns"}})
        created = registry.create(CONFIGMAPS, "ns", {"metadata": {"name": "c"}, "data": {"a": "1"}})
        seen.append(("written", "", created["metadata"]["resourceVersion"]))
        registry.update(CONFIGMAPS, "ns", "c", {**created, "data": {"a": "2"}})
        registry.delete(CONFIGMAPS, "ns", "c", DeleteOptions())
        assert seen == [
            ("mutating", "CREATE", "namespaces"), ("validating", "CREATE", "namespaces"),
            ("validating released", "CREATE", "namespaces"),
            ("mutating", "CREATE", "configmaps"), ("validating", "CREATE", "configmaps"),
            ("validating released", "CREATE", "configmaps"), ("written", "", created["metadata"]["resourceVersion"]),
            ("mutating", "UPDATE", "configmaps"), ("validating", "UPDATE", "configmaps"),
            ("validating released", "UPDATE", "configmaps"),
            ("mutating", "DELETE", "configmaps"), ("validating", "DELETE", "configmaps"),
            ("validating released", "DELETE", "configmaps"),
        ]
        with pytest.raises(APIError) as missing:  # NamespaceLifecycle, first: nothing after it runs
            registry.create(CONFIGMAPS, "absent", {"metadata": {"name": "c"}})
        assert missing.value.code == 404
        assert seen[-1] == ("validating released", "DELETE", "configmaps")
        with pytest.raises(APIError) as invalid:  # the kind's validation refuses; what was held is released
            registry.create(CONFIGMAPS, "ns", {"metadata": {"name": "Not_Valid"}})
        assert invalid.value.code == 422
        assert seen[-3:] == [("mutating", "CREATE", "configmaps"), ("validating", "CREATE", "configmaps"),
                             ("validating released", "CREATE", "configmaps")]
    finally:
        storage.close()


def test_a_validating_plugin_sees_what_the_prepare_step_set():
    order: list[str] = []

    class Mutating:
        name = "m"

        def admit(self, attributes: Attributes) -> None:
            order.append("mutate")

    class Validating:
        name = "v"

        def validate(self, attributes: Attributes, hold: ExitStack) -> None:
            assert attributes.obj is not None
            order.append(f"validate uid={attributes.obj['metadata'].get('uid')}")
            hold.callback(order.append, "release")

    obj: dict[str, Any] = {"metadata": {"name": "x"}}
    chain = Chain(mutating=[Mutating()], validating=[Validating()])
    with chain.admit(Attributes(Operation.CREATE, CONFIGMAPS, "ns", "x", obj),
                     prepare=lambda: obj["metadata"].update(uid="u1")):
        order.append("write")
    assert order == ["mutate", "validate uid=u1", "write", "release"]
