"""What the garbage collector does with one object, decided from its owners' states: nothing, drop some
owner references, or delete it with a propagation policy.

Upstream: pkg/controller/garbagecollector/garbagecollector.go `classifyReferences` (an owner that is gone,
or has another uid, is dangling; one being deleted with the foregroundDeletion finalizer is waiting for
its dependents; any other is solid) and `attemptToDeleteItem`'s switch (a solid owner keeps the object,
minus its dangling and waiting references; no solid owner but a waiting one, and dependents of its own →
delete in the foreground, unblocking its dependents first if one of them deletes its own dependents (a
cycle); otherwise delete with the policy its own finalizers ask for, Background by default).
Pure: the collector looks the owners up (live GETs) and carries the decision out.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from control.controllers.shared.helpers import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, finalizers_of


class OwnerState(enum.Enum):
    ABSENT = "absent"  # not found, or found with another uid
    PRESENT = "present"
    DELETING_DEPENDENTS = "deletingDependents"  # deletionTimestamp + the foregroundDeletion finalizer


@dataclass(frozen=True)
class References:
    solid: tuple[str, ...] = ()
    dangling: tuple[str, ...] = ()
    waiting_for_dependents_deletion: tuple[str, ...] = ()


def classify_references(references: Sequence[Mapping[str, Any]], states: Mapping[str, OwnerState]) -> References:
    """Owner uids by kind of reference, in the object's order."""
    solid, dangling, waiting = [], [], []
    for reference in references:
        uid = str(reference.get("uid"))
        state = states[uid]
        if state is OwnerState.ABSENT:
            dangling.append(uid)
        elif state is OwnerState.DELETING_DEPENDENTS:
            waiting.append(uid)
        else:
            solid.append(uid)
    return References(tuple(solid), tuple(dangling), tuple(waiting))


class Action(enum.Enum):
    NOTHING = "nothing"
    REMOVE_REFERENCES = "removeReferences"
    DELETE = "delete"


@dataclass(frozen=True)
class Decision:
    action: Action
    remove_owner_uids: tuple[str, ...] = ()
    policy: str | None = None  # propagationPolicy of a DELETE
    unblock_first: bool = False  # set blockOwnerDeletion=false on the object's references before deleting


def decide(obj: Mapping[str, Any], references: References, *, has_dependents: bool,
           a_dependent_deletes_dependents: bool) -> Decision:
    """Upstream attemptToDeleteItem's switch for an object with owner references."""
    if references.solid:
        remove = references.dangling + references.waiting_for_dependents_deletion
        return Decision(Action.REMOVE_REFERENCES, remove) if remove else Decision(Action.NOTHING)
    if references.waiting_for_dependents_deletion and has_dependents:
        return Decision(Action.DELETE, policy="Foreground", unblock_first=a_dependent_deletes_dependents)
    finalizers = finalizers_of(obj)
    if ORPHAN_FINALIZER in finalizers:
        policy = "Orphan"
    elif FOREGROUND_FINALIZER in finalizers:
        policy = "Foreground"
    else:
        policy = "Background"
    return Decision(Action.DELETE, policy=policy)
