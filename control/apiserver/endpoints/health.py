"""`/healthz`, `/livez` and `/readyz` with their named checks (upstream: k8s.io/apiserver/pkg/server/healthz
healthz.go — handleRootHealth, the `[+]name ok` lines, `?verbose`, `?exclude=`, one path per check).

What a client sees, as upstream:
- `GET /readyz` → 200 `ok`; `?verbose` lists every check, `[+]etcd ok`, then `readyz check passed`.
- a failing check → 500 with every check listed, the failing one as `[-]etcd failed: reason withheld`
  (the reason goes to the log, not to an unauthenticated client), then `readyz check failed`.
- `GET /readyz/etcd` → that check alone: `ok`, or 500 `internal server error: <reason>`.
- `?exclude=etcd` leaves a check out (a name nothing has is listed as `warn: some health checks cannot be
  excluded: no matches for "x"`).
Bodies are text/plain with `X-Content-Type-Options: nosniff`.

The checks themselves (ping, log, etcd, informer-sync, shutdown, …) are the server's (server.py); the
answer is worked out here from their results alone (`render`), so its wording is tested without a server.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

Check = Callable[[], Awaitable[str | None]]  # None when healthy, else the reason


@dataclass(frozen=True)
class Answer:
    code: int
    text: str


def render(kind: str, results: Sequence[tuple[str, str | None]], *, verbose: bool,
           unmatched_excludes: Sequence[str] = ()) -> Answer:
    """The body upstream's handleRootHealth writes for `kind` (healthz, livez, readyz) given each check's
    result in order."""
    failed = any(error is not None for _, error in results)
    lines = [f"[+]{name} ok" if error is None else f"[-]{name} failed: reason withheld" for name, error in results]
    if unmatched_excludes:
        lines.append("warn: some health checks cannot be excluded: no matches for "
                     + ",".join(f'"{name}"' for name in unmatched_excludes))
    if failed:
        return Answer(500, "\n".join(lines) + f"\n{kind} check failed\n")
    if verbose:
        return Answer(200, "\n".join(lines) + f"\n{kind} check passed\n")
    return Answer(200, "ok")


def render_one(error: str | None) -> Answer:
    """`/readyz/<name>`: upstream's per-check handler."""
    if error is None:
        return Answer(200, "ok")
    return Answer(500, f"internal server error: {error}\n")


class HealthChecks:
    """Named checks of one endpoint (`kind`: healthz, livez or readyz), in the order they are listed."""

    def __init__(self, kind: str, checks: Sequence[tuple[str, Check]]) -> None:
        self.kind = kind
        self._checks = dict(checks)

    def names(self) -> list[str]:
        return list(self._checks)

    async def run(self, *, verbose: bool, exclude: Sequence[str] = ()) -> Answer:
        results: list[tuple[str, str | None]] = []
        for name, check in self._checks.items():
            if name in exclude:
                continue
            error = await check()
            if error is not None:
                log.info("%s check %s failed: %s", self.kind, name, error)
            results.append((name, error))
        unmatched = [name for name in exclude if name not in self._checks]
        return render(self.kind, results, verbose=verbose, unmatched_excludes=unmatched)

    async def run_one(self, name: str) -> Answer | None:
        """None for a name nothing checks (the caller answers 404)."""
        check = self._checks.get(name)
        return None if check is None else render_one(await check())
