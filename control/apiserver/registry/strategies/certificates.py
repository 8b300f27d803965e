"""CertificateSigningRequests (upstream pkg/registry/certificates/certificates/strategy.go and its REST
storage's `/status` and `/approval` subresources).

What differs from a plain kind, as upstream:
- create: the status is dropped, and `spec.username`, `uid`, `groups` and `extra` are the requesting
  user's (authn.current_user, set per request), whatever the client sent — the signer trusts them.
- update of the main resource: only metadata changes; spec and status stay the stored ones.
- `/approval`: only `status.conditions` changes (kubectl certificate approve|deny adds Approved or Denied).
- `/status`: the status changes but the Approved and Denied conditions are kept as stored, so a signer
  writing the certificate cannot approve its own request.
- conditions get `lastUpdateTime` (when unset) and `lastTransitionTime` (kept from the old condition of the
  same type and status, else now) as upstream's populateConditionTimestamps does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from control.apimachinery.meta import deep_copy, format_timestamp
from control.apiserver import status
from control.apiserver.authentication import tokens as authn
from control.apiserver.registry.strategies.base import Strategy, prepare_for_status_update
from control.apiserver.resources import Resource

APPROVAL_CONDITIONS = ("Approved", "Denied")


def _conditions(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    conditions = (obj.get("status") or {}).get("conditions") if isinstance(obj.get("status"), dict) else None
    return [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []


def populate_condition_timestamps(new: dict[str, Any], old: Mapping[str, Any] | None, now: datetime) -> None:
    """upstream populateConditionTimestamps (in place)."""
    stamp = format_timestamp(now)
    previous = {(c.get("type"), c.get("status")): c for c in _conditions(old or {})}
    for condition in _conditions(new):
        if not condition.get("lastUpdateTime"):
            condition["lastUpdateTime"] = stamp
        if not condition.get("lastTransitionTime"):
            before = previous.get((condition.get("type"), condition.get("status")))
            condition["lastTransitionTime"] = (before or {}).get("lastTransitionTime") or stamp


class CertificateSigningRequestStrategy(Strategy):
    resets_status_on_create = True

    def __init__(self, resource: Resource, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        super().__init__(resource)
        self.clock = clock

    def prepare_for_create(self, obj: dict[str, Any], *, now: datetime, uid: str) -> None:
        super().prepare_for_create(obj, now=now, uid=uid)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        for key in ("username", "uid", "groups", "extra"):
            spec.pop(key, None)
        user = authn.current_user.get()
        if user is not None:
            spec["username"] = user.username
            if user.uid:
                spec["uid"] = user.uid
            spec["groups"] = list(user.to_json()["groups"])

    def prepare_for_update(self, new: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_update(new, old)
        if "spec" in old:
            new["spec"] = deep_copy(old["spec"])
        else:
            new.pop("spec", None)

    def prepare_for_subresource_update(self, subresource: str, new: Mapping[str, Any],
                                       old: Mapping[str, Any]) -> dict[str, Any]:
        if subresource == "approval":
            result = deep_copy(dict(old))
            result.setdefault("status", {})["conditions"] = deep_copy(_conditions(new))
        elif subresource == "status":
            result = prepare_for_status_update(new, old)
            kept = [c for c in _conditions(old) if c.get("type") in APPROVAL_CONDITIONS]
            others = [c for c in _conditions(result) if c.get("type") not in APPROVAL_CONDITIONS]
            if kept or others or "conditions" in (result.get("status") or {}):
                result.setdefault("status", {})["conditions"] = deep_copy(kept) + others
        else:
            raise status.bad_request(f"{self.resource.plural}/{subresource} cannot be written")
        self.defaults(result)
        populate_condition_timestamps(result, old, self.clock())
        return result
