"""The RBAC objects in memory, bindings indexed by subject (upstream: the RBAC authorizer reads Roles and
bindings from informer listers, k8s.io/client-go/listers/rbac/v1; the index by subject is slimkube's).

A request's rules come from the bindings that name the user, one of its groups or its service account: with
1,000 bindings in a cluster, reading (and decoding) all of them per request costs tens of milliseconds; the
index answers from the handful that name this user. The cache is a follower.Consumer, fed from the watch
cache; `catch_up` lets RBAC look again before refusing, once the cache has applied every change the store
had when the refusal was about to be made, so a binding created just before a request is never missed
(upstream's informers give no such promise; the clients here and the tests rely on it). The wait is bounded
(CATCH_UP_SECONDS): a store revision no watched key carries (etcd's compaction key) is never reached, until
the next write. Thread-safe: the follower writes on the event loop, the authorizer reads on worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from control.apiserver.authentication.tokens import UserInfo
from control.apiserver.authorization.rbac import SERVICE_ACCOUNT_PREFIX, IndexedPolicy
from control.apiserver.authorization.rules import Rule, rules_of
from control.storage.interface import Storage

CLUSTER_ROLES, ROLES = "/registry/clusterroles/", "/registry/roles/"
CLUSTER_ROLE_BINDINGS, ROLE_BINDINGS = "/registry/clusterrolebindings/", "/registry/rolebindings/"
CATCH_UP_SECONDS = 0.5

SubjectKey = tuple[str, ...]  # ("User", name) | ("Group", name) | ("ServiceAccount", namespace, name)


def subject_key(subject: Mapping[str, Any], namespace: str) -> SubjectKey | None:
    """The index key of one binding subject (a service account's namespace defaults to the binding's)."""
    kind, name = subject.get("kind"), subject.get("name")
    if not isinstance(name, str):
        return None
    if kind in ("User", "Group"):
        return (kind, name)
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return ("ServiceAccount", sa_namespace, name) if isinstance(sa_namespace, str) and sa_namespace else None
    return None


def user_keys(user: UserInfo, groups: Iterable[str]) -> list[SubjectKey]:
    """The keys a binding naming this user is indexed under."""
    keys: list[SubjectKey] = [("User", user.username), *(("Group", g) for g in groups)]
    if user.username.startswith(SERVICE_ACCOUNT_PREFIX):
        namespace, _, name = user.username[len(SERVICE_ACCOUNT_PREFIX):].partition(":")
        if namespace and name:
            keys.append(("ServiceAccount", namespace, name))
    return keys


def _split(key: str, prefix: str) -> tuple[str, str]:
    """`/registry/roles/ns/name` → (ns, name); a cluster-scoped key → ("", name)."""
    rest = key[len(prefix):]
    namespace, slash, name = rest.partition("/")
    return (namespace, name) if slash else ("", rest)


class PolicyCache(IndexedPolicy):
    """A PolicySource (rbac.py) in memory, indexed (rbac.IndexedPolicy); each role's rules are read once,
    when it is stored."""

    prefixes: tuple[str, ...] = (CLUSTER_ROLES, ROLES, CLUSTER_ROLE_BINDINGS, ROLE_BINDINGS)

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._changed = threading.Condition()
        self._revision = 0  # everything up to this revision is applied
        self._roles: dict[tuple[str, str], Mapping[str, Any]] = {}  # ("" for cluster roles, name) → role
        self._rules: dict[tuple[str, str], tuple[Rule, ...]] = {}  # the same keys → the role's rules
        self._bindings: dict[tuple[str, str], Mapping[str, Any]] = {}  # ("" for cluster bindings, name) → binding
        self._index: dict[tuple[str, SubjectKey], set[str]] = {}  # (scope, subject) → binding names

    # -- the follower.Consumer side --------------------------------------------------------------------

    def reset(self, objects: Iterable[tuple[str, dict[str, Any] | None]]) -> None:
        """Replace everything with `objects` (storage key, object), at once for readers."""
        with self._changed:  # reentrant: apply takes it again
            self._roles.clear()
            self._rules.clear()
            self._bindings.clear()
            self._index.clear()
            for key, obj in objects:
                self.apply(key, obj)

    def apply(self, key: str, obj: dict[str, Any] | None) -> None:
        if key.startswith(CLUSTER_ROLE_BINDINGS) or key.startswith(ROLE_BINDINGS):
            prefix = CLUSTER_ROLE_BINDINGS if key.startswith(CLUSTER_ROLE_BINDINGS) else ROLE_BINDINGS
            self._set_binding(_split(key, prefix), obj)
        elif key.startswith(CLUSTER_ROLES) or key.startswith(ROLES):
            where = _split(key, CLUSTER_ROLES if key.startswith(CLUSTER_ROLES) else ROLES)
            with self._changed:
                if obj is None:
                    self._roles.pop(where, None)
                    self._rules.pop(where, None)
                else:
                    self._roles[where] = obj
                    self._rules[where] = rules_of(obj)

    def caught_up(self, revision: int) -> None:
        with self._changed:
            self._revision = revision
            self._changed.notify_all()

    def _keys_of(self, scope: str, binding: Mapping[str, Any]) -> set[tuple[str, SubjectKey]]:
        subjects = binding.get("subjects")
        keys = (subject_key(s, scope) for s in subjects if isinstance(s, Mapping)) if isinstance(subjects, list) else ()
        return {(scope, key) for key in keys if key is not None}

    def _set_binding(self, where: tuple[str, str], binding: dict[str, Any] | None) -> None:
        scope, name = where
        with self._changed:
            old = self._bindings.pop(where, None)
            for key in self._keys_of(scope, old) if old is not None else ():
                self._index[key].discard(name)
                if not self._index[key]:
                    del self._index[key]
            if binding is not None:
                self._bindings[where] = binding
                for key in self._keys_of(scope, binding):
                    self._index.setdefault(key, set()).add(name)

    def catch_up(self) -> bool:
        """Wait (up to CATCH_UP_SECONDS) until every change the store holds now is applied; whether the
        cache moved meanwhile (blocking: reads the store's revision)."""
        target = self._storage.revision()
        with self._changed:
            before = self._revision
            self._changed.wait_for(lambda: self._revision >= target, timeout=CATCH_UP_SECONDS)
            return self._revision != before

    # -- the PolicySource side --------------------------------------------------------------------------

    def cluster_role(self, name: str) -> Mapping[str, Any] | None:
        with self._changed:
            return self._roles.get(("", name))

    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        if not namespace:
            return None
        with self._changed:
            return self._roles.get((namespace, name))

    def role_rules(self, scope: str, name: str) -> tuple[Rule, ...] | None:
        with self._changed:
            return self._rules.get((scope, name))

    def cluster_role_bindings(self) -> Sequence[Mapping[str, Any]]:
        with self._changed:
            return [b for (scope, _), b in sorted(self._bindings.items()) if not scope]

    def role_bindings(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        if not namespace:
            return []
        with self._changed:
            return [b for (scope, _), b in sorted(self._bindings.items()) if scope == namespace]

    def bindings_naming(self, scope: str, user: UserInfo, groups: Iterable[str]) -> Sequence[Mapping[str, Any]]:
        """The bindings of `scope` ("" = cluster role bindings) with a subject that may be the user, one of
        `groups` or its service account, by name."""
        keys = user_keys(user, groups)
        with self._changed:
            names: set[str] = set()
            for key in keys:
                names.update(self._index.get((scope, key), ()))
            return [self._bindings[(scope, name)] for name in sorted(names)]
