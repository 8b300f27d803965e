"""An authorizer's answer (upstream k8s.io/apiserver/pkg/authorization/authorizer: Decision and the
(decision, reason) pair every Authorize returns)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Decision(enum.Enum):
    DENY = "deny"
    ALLOW = "allow"
    NO_OPINION = "no-opinion"


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOW
