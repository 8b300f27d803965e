"""The REST client every component uses (upstream: k8s.io/client-go/rest — client.go, request.go,
watch/streamwatcher.go).

Design notes
- One `requests.Session` per client: its urllib3 pool keeps connections alive and is shared safely by
  the component's threads. urllib3's own retries are off (`max_retries=0`); `retry.py` decides.
- `verify=` is passed on every request, never left on the session: `requests` lets REQUESTS_CA_BUNDLE
  (set on these machines) override `session.verify`, which would reject the server's private CA.
- Every error answer is raised as `errors.error_from_status` (NotFound, Conflict, Gone, Invalid, ...).
  Transport errors that outlive the retries are raised as the `requests` exception they are.
- `list` with a `limit` pages through `continue` itself and returns one List at the first page's
  resourceVersion; if the continue token expires (410) it falls back to one unpaged list, as client-go's
  pager does.
- `watch` hides reconnects: a broken stream, a read timeout or a restarted server is resumed from the
  last resourceVersion it saw (BOOKMARKs included), so callers see one stream with no gap and no
  duplicate (a watch from "" or "0" becomes resumable at its first BOOKMARK; before that it starts
  over, resending the current objects as ADDED); only a 410 (the server no longer has that history)
  ends it with `Gone`, and the caller relists. A `stop` Event ends it promptly even while it is blocked
  reading a quiet stream: a small thread watches `stop` and shuts the socket down, which wakes the
  blocked read (closing it would not).
"""

from __future__ import annotations

import builtins
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError

from control.api.typed.meta import List, TypedObject
from control.client.errors import Gone, error_from_status
from control.client.kubeconfig import ClientConfig, load_kubeconfig
from control.client.retry import Failure, RetryPolicy, parse_retry_after, retry_delay

__all__ = ["RESTClient", "RetryPolicy", "WatchEvent"]

log = logging.getLogger(__name__)

PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}
# A watch read that hears nothing for this long reconnects (from the last resourceVersion). Twice the API
# server's 60 s bookmark period, so a healthy stream with bookmarks never trips it; a half-open
# connection is noticed within two minutes.
WATCH_IDLE_SECONDS = 120.0
_STOP_POLL_SECONDS = 0.25


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    object: dict[str, Any]


def classify(exc: requests.RequestException) -> Failure | None:
    """What kind of transport failure `exc` is; None for one that must not be retried (TLS errors)."""
    if isinstance(exc, requests.exceptions.SSLError):
        return None
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return Failure.NOT_CONNECTED
    if isinstance(exc, requests.exceptions.ConnectionError) and _never_connected(exc):
        return Failure.NOT_CONNECTED
    if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.Timeout,
                        requests.exceptions.ChunkedEncodingError)):
        return Failure.CONNECTION_LOST
    return None


def _never_connected(exc: BaseException) -> bool:
    """Whether the cause chain says the TCP connection was never made (refused, unreachable, timeout)."""
    return _in_chain(exc, (NewConnectionError, ConnectTimeoutError))


def _in_chain(exc: BaseException, types: tuple[type[BaseException], ...]) -> bool:
    """Whether `exc` or anything it wraps (requests and urllib3 nest their causes) is one of `types`."""
    seen: set[int] = set()
    stack: list[Any] = [exc]
    while stack:
        item = stack.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, types):
            return True
        if isinstance(item, BaseException):
            stack += [getattr(item, "reason", None), item.__cause__, item.__context__, *item.args[:1]]
    return False


def _status_body(response: requests.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        text = response.text[:500].strip()
        return {"message": text} if text else {}
    return body if isinstance(body, dict) else {}


class _Stopper:
    """Shuts down the socket of the watch response in flight once `stop` is set, so a read blocked on
    a quiet stream returns at once (closing the socket would not wake it; shutdown does)."""

    def __init__(self, stop: threading.Event) -> None:
        self._stop = stop
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._response: requests.Response | None = None
        self._thread = threading.Thread(target=self._run, name="watch-stopper", daemon=True)
        self._thread.start()

    def attach(self, response: requests.Response | None) -> None:
        with self._lock:
            self._response = response
            if response is not None and self._stop.is_set():
                _shutdown(response)

    def close(self) -> None:
        self._done.set()

    def _run(self) -> None:
        while not self._done.is_set():
            if self._stop.wait(_STOP_POLL_SECONDS):
                with self._lock:
                    if self._response is not None:
                        _shutdown(self._response)
                return


def _shutdown(response: requests.Response) -> None:
    connection = getattr(response.raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed: the reader is waking up anyway


class RESTClient:
    """Requests to one API server, with the retry rules of `retry.py`. Thread-safe."""

    def __init__(self, config: ClientConfig, *, user_agent: str = "slimkube", timeout: float = 30,
                 retry: RetryPolicy | None = None) -> None:
        self.config = config
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._base = config.server.rstrip("/")
        self._verify: str | bool = config.ca_file or not config.insecure
        self._cert: tuple[str, str] | str | None = None
        if config.cert_file:
            self._cert = (config.cert_file, config.key_file) if config.key_file else config.cert_file
        self._session = requests.Session()
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=64, max_retries=0)
        self._session.mount("https://", adapter)
        self._session.mount("http://", adapter)
        self._session.headers.update({"User-Agent": user_agent, "Accept": "application/json"})
        if config.token:
            self._session.headers["Authorization"] = f"Bearer {config.token}"

    @classmethod
    def from_kubeconfig(cls, path: str, *, context: str | None = None, **kw: Any) -> RESTClient:
        return cls(load_kubeconfig(path, context=context), **kw)

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> RESTClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- verbs ---------------------------------------------------------------------------------------

    def get(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        return self._json("GET", path, params=params)

    def list(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """A List; with `limit` in `params`, every page joined (all at the first page's revision)."""
        query = dict(params or {})
        result = self._json("GET", path, params=query)
        if "limit" not in query:
            return result
        items = list(result.get("items") or [])
        token = List(result).metadata.continue_
        while token:
            try:
                page = self._json("GET", path, params={**query, "continue": token})
            except Gone:
                log.info("continue token for %s expired; listing it whole", path)
                return self._json("GET", path, params={k: v for k, v in query.items() if k != "limit"})
            items += page.get("items") or []
            token = List(page).metadata.continue_
        metadata = dict(result.get("metadata") or {})
        metadata.pop("continue", None)
        metadata.pop("remainingItemCount", None)
        return {**result, "metadata": metadata, "items": items}

    def create(self, path: str, body: dict[str, Any], *, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        return self._json("POST", path, params=params, body=body)

    def update(self, path: str, body: dict[str, Any], *, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        return self._json("PUT", path, params=params, body=body)

    def patch(self, path: str, patch: dict[str, Any] | builtins.list[Any], *,
              patch_type: str = "merge") -> dict[str, Any]:
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(f"patch_type must be one of {sorted(PATCH_CONTENT_TYPES)}") from None
        return self._json("PATCH", path, body=patch, content_type=content_type)

    def delete(self, path: str, *, grace_period_seconds: int | None = None, propagation_policy: str | None = None,
               preconditions: dict[str, Any] | None = None) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions is not None:
            options["preconditions"] = preconditions
        body = {"kind": "DeleteOptions", "apiVersion": "v1", **options} if options else None
        return self._json("DELETE", path, body=body)

    def watch(self, path: str, *, resource_version: str = "", params: Mapping[str, str] | None = None,
              timeout_seconds: int | None = None, allow_bookmarks: bool = True,
              stop: threading.Event | None = None) -> Iterator[WatchEvent]:
        """Events after `resource_version` as one stream across reconnects (see the module notes)."""
        deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
        stopper = _Stopper(stop) if stop is not None else None
        waiter = stop or threading.Event()
        rv = resource_version
        # From "" or "0" the stream starts with the current objects as ADDED events in key order, not
        # revision order: resuming from one of theirs could skip others. Until a BOOKMARK (always newer
        # than that initial list) says where the stream is, a break starts the watch over instead.
        resumable = rv not in ("", "0")
        failures = 0
        try:
            while not waiter.is_set():
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return
                query = {**(params or {}), "watch": "1"}
                if rv:
                    query["resourceVersion"] = rv
                if allow_bookmarks:
                    query["allowWatchBookmarks"] = "true"
                if remaining is not None:
                    query["timeoutSeconds"] = str(max(1, int(remaining + 0.999)))
                delay, response = self._open_watch(path, query, failures=failures + 1)
                if response is None:
                    failures += 1
                    waiter.wait(delay)
                    continue
                if stopper is not None:
                    stopper.attach(response)
                events, opened = 0, time.monotonic()
                try:
                    for line in response.iter_lines():
                        if not line:
                            continue
                        event = _decode_event(line)
                        resumable = resumable or event.type == "BOOKMARK"
                        if resumable:
                            rv = TypedObject(event.object).metadata.resource_version or rv
                        events += 1
                        failures = 0
                        yield event
                        if waiter.is_set():
                            return
                    if events or time.monotonic() - opened >= 1.0:
                        continue  # the server ended the stream (its own timeout): resume at once
                    broken = None  # ended at once with nothing: back off as for a failure
                except (requests.RequestException, OSError, ValueError) as exc:
                    if waiter.is_set():
                        return
                    broken = exc
                finally:
                    if stopper is not None:
                        stopper.attach(None)
                    response.close()
                if events or (broken is not None and _in_chain(broken, (ReadTimeoutError,))):
                    log.debug("watch %s broke after %d events (%s); resuming from %s", path, events, broken, rv)
                    continue
                failures += 1
                retry_in = retry_delay(self.retry, "GET", Failure.CONNECTION_LOST, failures=failures)
                if retry_in is None:
                    if broken is None:
                        return
                    raise broken
                log.info("watch %s broke (%s); resuming from %s in %.1fs", path, broken, rv, retry_in)
                waiter.wait(retry_in)
        finally:
            if stopper is not None:
                stopper.close()

    # -- plumbing ------------------------------------------------------------------------------------

    def _open_watch(self, path: str, query: dict[str, str], *,
                    failures: int) -> tuple[float, requests.Response | None]:
        """Open one watch stream: (0, response), or (delay, None) when it should be retried after
        `delay`; raises when it must not be (an error status, retries exhausted)."""
        try:
            response = self._send("GET", path, params=query, stream=True,
                                  timeout=(self.timeout, WATCH_IDLE_SECONDS))
        except requests.RequestException as exc:
            failure = classify(exc)
            delay = None if failure is None else retry_delay(self.retry, "GET", failure, failures=failures)
            if delay is None:
                raise
            log.info("watch %s: cannot connect (%s); retrying in %.1fs", path, exc, delay)
            return delay, None
        if response.status_code == 200:
            return 0.0, response
        try:
            body = _status_body(response)
        finally:
            response.close()
        delay = retry_delay(self.retry, "GET", Failure.STATUS, failures=failures, status=response.status_code,
                            retry_after=parse_retry_after(response.headers.get("Retry-After")))
        if delay is None:
            raise error_from_status(response.status_code, body)
        return delay, None

    def _json(self, method: str, path: str, *, params: Mapping[str, str] | None = None, body: Any = None,
              content_type: str = "application/json") -> dict[str, Any]:
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        headers = {"Content-Type": content_type} if data is not None else None
        failures = 0
        while True:
            failures += 1
            try:
                response = self._send(method, path, params=params, data=data, headers=headers, timeout=self.timeout)
            except requests.RequestException as exc:
                failure = classify(exc)
                delay = None if failure is None else retry_delay(self.retry, method, failure, failures=failures)
                if delay is None:
                    raise
                log.info("%s %s: %s; retrying in %.1fs", method, path, exc, delay)
                time.sleep(delay)
                continue
            if response.ok:
                return response.json() if response.content else {}
            delay = retry_delay(self.retry, method, Failure.STATUS, failures=failures, status=response.status_code,
                                retry_after=parse_retry_after(response.headers.get("Retry-After")))
            if delay is None:
                raise error_from_status(response.status_code, _status_body(response))
            log.info("%s %s: %d; retrying in %.1fs", method, path, response.status_code, delay)
            time.sleep(delay)

    def _send(self, method: str, path: str, **kw: Any) -> requests.Response:
        return self._session.request(method, self._base + path, verify=self._verify, cert=self._cert, **kw)


def _decode_event(line: bytes) -> WatchEvent:
    """One JSON line of a watch; an ERROR event is raised (Gone for 410)."""
    event = json.loads(line)
    if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
        raise ValueError(f"not a watch event: {line[:200]!r}")
    kind = str(event.get("type") or "")
    if kind == "ERROR":
        raise error_from_status(0, event["object"])
    return WatchEvent(kind, event["object"])
