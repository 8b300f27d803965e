"""The audit filter: one audit.k8s.io/v1 Event per stage of each request the policy logs (upstream
k8s.io/apiserver/pkg/endpoints/filters/audit.go and audit_init.go; the event's shape from pkg/audit/request.go
NewEventFromRequest, LogRequestObject, LogResponseObject).

Every response carries an `Audit-Id` header (the client's own `Audit-ID` when it sent one). The policy is
evaluated against the authenticated user (before impersonation, as upstream); the event names the
impersonated user too. Stages: RequestReceived when the request arrives, ResponseStarted when a long-running
request (watch, logs, exec) sends its headers, ResponseComplete when the answer is done — each unless the
policy omits it. At Request level the event carries the body the client sent (`requestObject`), at
RequestResponse also the JSON answer (`responseObject`); `managedFields` are dropped from both when the
policy says `omitManagedFields`. Annotations: `authorization.k8s.io/decision` (allow/forbid) and
`authorization.k8s.io/reason` from the authorization filter, and whatever admission added (webhooks'
auditAnnotations), through context.py.

Departures: a request refused by authentication (401) is not audited (upstream's failed-authentication filter
writes a RequestReceived event for it); a body that is not JSON (YAML, protobuf) is left out of the event.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson
from aiohttp import web

from control.apiserver.audit import context
from control.apiserver.audit.policy import Level, Policy
from control.apiserver.authentication import tokens as authn
from control.apiserver.authorization import filter as authz_filter
from control.apiserver.authorization.attributes import Attributes, request_attributes
from control.apiserver.status import APIError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
HEADER = "Audit-Id"
ANONYMOUS = authn.UserInfo("system:anonymous", groups=("system:unauthenticated",))
_ID_KEY = web.RequestKey("slimkube.audit.id", str)


def audit_id(request: web.Request) -> str:
    """The request's audit ID: the client's `Audit-ID` header when it sent one, else a new UUID."""
    found = request.get(_ID_KEY)
    if found is None:
        found = request.headers.get(HEADER) or str(uuid.uuid4())
        request[_ID_KEY] = found
    return found


async def _set_header(request: web.Request, response: web.StreamResponse) -> None:
    response.headers[HEADER] = audit_id(request)


def install_audit_id(app: web.Application) -> None:
    """Only the `Audit-Id` header, for a server that audits nothing (upstream sends it regardless)."""
    app.on_response_prepare.append(_set_header)


class Sink(Protocol):
    def process(self, event: dict[str, Any]) -> None: ...


def micro_time(seconds: float) -> str:
    """metav1.MicroTime on the wire: RFC 3339 with microseconds, UTC."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def source_ips(headers: Mapping[str, str], remote: str | None) -> list[str]:
    """utilnet.SourceIPs: X-Forwarded-For's entries, then X-Real-Ip, then the peer, each once."""
    ips = [part.strip() for part in headers.get("X-Forwarded-For", "").split(",") if part.strip()]
    for candidate in (headers.get("X-Real-Ip", "").strip(), remote or ""):
        if candidate and candidate not in ips:
            ips.append(candidate)
    return ips


def object_ref(attributes: Attributes) -> dict[str, Any] | None:
    if not attributes.resource_request:
        return None
    ref: dict[str, Any] = {"resource": attributes.resource}
    for key, value in (("namespace", attributes.namespace), ("name", attributes.name),
                       ("apiGroup", attributes.api_group), ("apiVersion", attributes.api_version),
                       ("subresource", attributes.subresource)):
        if value:
            ref[key] = value
    return ref


def response_status(code: int, body: Mapping[str, Any] | None) -> dict[str, Any]:
    """The event's metav1.Status: the answer's own Status for a failure, else just the code."""
    if body is not None and body.get("kind") == "Status":
        return {key: value for key, value in body.items() if key not in ("kind", "apiVersion")}
    return {"metadata": {}, "code": code}


def _json(data: bytes | None) -> Any:
    if not data:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _without_managed_fields(obj: Any) -> Any:
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) and "managedFields" in obj["metadata"]:
        obj = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "managedFields"}}
    if isinstance(obj, dict) and isinstance(obj.get("items"), list):
        obj = {**obj, "items": [_without_managed_fields(item) for item in obj["items"]]}
    return obj


class _Event:
    """One request's event while it runs."""

    def __init__(self, base: dict[str, Any], level: Level, omit: frozenset[str], omit_managed: bool,
                 record: context.Record, user: authn.UserInfo) -> None:
        self.base = base
        self.level = level
        self.omit = omit
        self.omit_managed = omit_managed
        self.record = record
        self.user = user


_EVENT_KEY = web.RequestKey("slimkube.audit.event", _Event)


class AuditFilter:
    """The middleware and the response hook that write events to `sink`."""

    def __init__(self, policy: Policy, sink: Sink, *, is_long_running: Callable[[web.Request], bool],
                 clock: Callable[[], float] = time.time) -> None:
        self.policy = policy
        self.sink = sink
        self.is_long_running = is_long_running
        self.clock = clock

    def install(self, app: web.Application) -> None:
        app.on_response_prepare.append(self._on_prepare)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        user = request.get(authz_filter.USER_KEY) or ANONYMOUS
        attributes = request_attributes(user, request.method, request.path, request.query)
        evaluation = self.policy.evaluate(attributes)
        if evaluation.level is Level.NONE:
            return await handler(request)
        received = self.clock()
        base: dict[str, Any] = {
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": evaluation.level.wire,
            "auditID": audit_id(request), "stage": "", "requestURI": request.raw_path, "verb": attributes.verb,
            "user": _user_json(user), "sourceIPs": source_ips(request.headers, request.remote),
        }
        if agent := request.headers.get("User-Agent"):
            base["userAgent"] = agent
        if (ref := object_ref(attributes)) is not None:
            base["objectRef"] = ref
        base["requestReceivedTimestamp"] = micro_time(received)
        wants_body = evaluation.level >= Level.REQUEST or (ref is not None and attributes.verb == "create")
        record = context.Record(wants_body=wants_body)
        event = _Event(base, evaluation.level, evaluation.omit_stages, evaluation.omit_managed_fields, record, user)
        request[_EVENT_KEY] = event
        self._emit(event, request, "RequestReceived", None)
        token = context.begin(record)
        code, body = 500, None
        try:
            response = await handler(request)
            code = response.status
            if isinstance(response, web.Response) and isinstance(response.body, bytes):
                body = response.body
            return response
        except APIError as exc:
            code, body = exc.code, orjson.dumps(exc.status)
            raise
        except web.HTTPException as exc:
            code = exc.status
            raise
        finally:
            context.end(token)
            self._emit(event, request, "ResponseComplete", (code, body))

    async def _on_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        response.headers[HEADER] = audit_id(request)
        event = request.get(_EVENT_KEY)
        if event is not None and self.is_long_running(request):
            self._emit(event, request, "ResponseStarted", (response.status, None))

    def _emit(self, event: _Event, request: web.Request, stage: str, answer: tuple[int, bytes | None] | None) -> None:
        if stage in event.omit:
            return
        out = dict(event.base)
        out["stage"] = stage
        current = request.get(authz_filter.USER_KEY)
        if current is not None and current != event.user:
            out["impersonatedUser"] = _user_json(current)
        request_body = _json(event.record.body)
        if isinstance(request_body, dict) and "objectRef" in out:
            out["objectRef"] = _filled_ref(out["objectRef"], request_body)
        if answer is not None:
            code, body = answer
            failure = _json(body) if code >= 400 else None
            out["responseStatus"] = response_status(code, failure if isinstance(failure, dict) else None)
            if event.level >= Level.REQUEST and request_body is not None:
                out["requestObject"] = _without_managed_fields(request_body) if event.omit_managed else request_body
            if event.level >= Level.REQUEST_RESPONSE and body and stage == "ResponseComplete" \
                    and (answered := _response_object(body, failure, event.omit_managed)) is not None:
                out["responseObject"] = answered
        out["stageTimestamp"] = micro_time(self.clock())
        annotations = _decision(request.get(authz_filter.VERDICT_KEY))
        annotations.update(event.record.annotations)
        if annotations:
            out["annotations"] = annotations
        self.sink.process(out)


def _response_object(body: bytes, failure: Any, omit_managed: bool) -> Any:
    """The answer as the event carries it: the server's own JSON spliced in unparsed (orjson.Fragment) unless
    managedFields must come out; a body that is not JSON is left out."""
    if failure is not None:
        return failure
    if omit_managed:
        return _without_managed_fields(_json(body))
    body = body.strip()  # the answer ends in a newline, which would split the line
    if b"\n" in body:  # indented (`?pretty=true`): parsed, so the event stays one line
        return _json(body)
    return orjson.Fragment(body) if body[:1] in (b"{", b"[") else None


def _user_json(user: authn.UserInfo) -> dict[str, Any]:
    """The event's user; an anonymous request is not in system:authenticated (to_json adds that group)."""
    if user is ANONYMOUS:
        return {"username": user.username, "groups": list(user.groups)}
    return user.to_json()


def _filled_ref(ref: dict[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """LogRequestObject: the namespace, name, uid and resourceVersion the body names, where the path did not."""
    metadata = body.get("metadata")
    if not isinstance(metadata, dict) or body.get("kind") in ("DeleteOptions", None):
        return ref
    filled = dict(ref)
    for key, source in (("namespace", "namespace"), ("name", "name"), ("uid", "uid"),
                        ("resourceVersion", "resourceVersion")):
        if not filled.get(key) and isinstance(metadata.get(source), str) and metadata[source]:
            filled[key] = metadata[source]
    return filled


def _decision(verdict: Any) -> dict[str, str]:
    if verdict is None:
        return {}
    return {"authorization.k8s.io/decision": "allow" if verdict.allowed else "forbid",
            "authorization.k8s.io/reason": verdict.reason}
