"""HTTP handlers for resource URLs (upstream: k8s.io/apiserver/pkg/endpoints/handlers — get.go, create.go,
update.go, patch.go, delete.go, watch.go — and the subresource REST storages: pods/binding, pods/eviction, pods/log,
*/scale, */status, namespaces/finalize).

A handler reads the request (request.py), runs the blocking registry call in a worker thread and writes
the answer: the object, a List, or — when the Accept header asks for it — a meta.k8s.io Table. Codes
follow upstream: 201 for create, 200/201 for update (201 when it created), 200 for a delete that removed
the object and 202 for one that only marked it (graceful pod, finalizers, terminating namespace).
A client that accepts only `application/vnd.kubernetes.protobuf` gets the same answers re-encoded as
protobuf (codec/protoencode.py), or 406 for one without a protobuf form; every other client gets JSON.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import aiohttp
from aiohttp import web
from multidict import MultiMapping
from prometheus_client import Counter

from control.api import podlogoptions
from control.api.typed import Pod
from control.apimachinery.labels import SelectorError
from control.apimachinery.validation import FieldError
from control.apiserver import status
from control.apiserver.audit import context as audit_context
from control.apiserver.codec import jsoncodec as codec
from control.apiserver.codec import protoencode
from control.apiserver.codec.jsonwire import encode_json, go_escape
from control.apiserver.endpoints import request as req
from control.apiserver.endpoints import tables
from control.apiserver.endpoints import versionviews as views
from control.apiserver.endpoints.watch import EventLines, WatchStream
from control.apiserver.registry import binding, eviction
from control.apiserver.registry.store import DeleteOptions, Registry
from control.apiserver.resources import Resource, by_path, storage_resource
from control.apiserver.status import APIError
from control.apiserver.storage.selection import Filter, parse_filter
from control.apiserver.storage.watchcache import WatchCache
from control.apiserver.streaming import websocket as streaming
from control.apiserver.streaming.kubeletclient import KubeletClient, NodeConnection, node_connection

log = logging.getLogger(__name__)
MAX_KUBELET_ERROR = 50_000  # bytes of a kubelet's refusal read for the message (upstream maxReadLength)

PODS = by_path("", "v1", "pods")
NODES = by_path("", "v1", "nodes")
_VERB_FOR_METHOD = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def json_response(body: Any, code: int = 200) -> web.Response:
    return web.Response(body=encode_json(body), status=code, content_type="application/json")


class ResourceHandlers:
    """Everything under `/api/v1/` and `/apis/{group}/{version}/`."""

    def __init__(self, registry: Registry, cache: WatchCache, *, kubelet: KubeletClient,
                 bookmark_seconds: float = 60.0, watch_events: Counter | None = None) -> None:
        self.registry = registry
        self.watch_events = watch_events
        self.kubelet = kubelet
        self.cache = cache
        self.lines = EventLines()
        self.bookmark_seconds = bookmark_seconds

    async def handle(self, request: web.Request) -> web.StreamResponse:
        answer = protoencode.negotiate(request.headers.get("Accept"))
        if answer == "json":
            return await self._handle(request)  # kubectl and every client that lists JSON
        if answer == "none" or req.query_bool(request.query, "watch"):
            raise status.not_acceptable()  # Tables and watch streams are JSON only here
        try:
            response = await self._handle(request)
        except APIError as exc:
            response = json_response(exc.status, exc.code)
        return _as_protobuf(response)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        group = request.match_info.get("group", "")
        version = request.match_info.get("version", "v1")
        target = req.parse_target(self.registry.resources, group, version, request.match_info.get("tail", ""))
        resource = target.resource
        method = request.method
        verb = _VERB_FOR_METHOD.get(method)
        if verb is None:
            raise status.method_not_allowed()
        if (view := views.view_of(resource)) is not None:
            return await self._view(request, target, view)
        if target.subresource:
            allowed = resource.subresources[target.subresource].verbs
            if verb not in allowed and not (verb == "get" and target.subresource in ("exec", "attach", "portforward")):
                raise status.method_not_allowed()
            return await self._subresource(request, target)
        if not target.name:
            verb = {"get": "list", "delete": "deletecollection", "create": "create"}.get(verb)
            if verb is None or verb not in resource.verbs:
                raise status.method_not_allowed()
            if verb == "list":
                return await self._list(request, target)
            if verb == "create":
                return await self._create(request, target)
            return await self._delete_collection(request, target)
        if verb == "create" or verb not in resource.verbs:
            raise status.method_not_allowed()
        handler: Callable[[web.Request, req.Target], Awaitable[web.StreamResponse]] = getattr(self, f"_{verb}")
        return await handler(request, target)

    # -- collection ---------------------------------------------------------------------------------

    async def _list(self, request: web.Request, target: req.Target) -> web.StreamResponse:
        query = request.query
        flt = self._filter(target, query)
        resource_version = req.resource_version(query)
        if req.query_bool(query, "watch"):
            timeout = req.query_int(query, "timeoutSeconds")
            self._include_object(query)  # a bad includeObject is a 400 here, not a ValueError in the stream
            send_initial = query.get("sendInitialEvents")
            stream = WatchStream(request, target, flt, registry=self.registry, cache=self.cache, lines=self.lines,
                                 bookmark_seconds=self.bookmark_seconds, events_sent=self.watch_events)
            return await stream.serve(resource_version=resource_version, timeout_seconds=timeout,
                                      bookmarks=req.query_bool(query, "allowWatchBookmarks"),
                                      send_initial=None if send_initial is None else req.query_bool(
                                          query, "sendInitialEvents"))
        limit = req.query_int(query, "limit") or 0
        table = tables.parse_accept_table(request.headers.get("Accept"))
        include_object = self._include_object(query)
        page = await asyncio.to_thread(self.registry.list, target.resource, target.namespace, flt, limit=limit,
                                       continue_token=query.get("continue", ""), resource_version=resource_version,
                                       raw=table is None)
        if table is not None:
            return json_response(tables.table_for(
                target.resource, page.items, now=datetime.now(UTC), list_resource_version=page.resource_version,
                include_object=include_object, table_version=table.version, continue_token=page.continue_token,
                printer=self._printer(target)))
        metadata: dict[str, Any] = {"resourceVersion": page.resource_version}
        if page.continue_token:
            metadata["continue"] = page.continue_token
        resource = target.resource
        envelope = {"kind": self._list_kind(resource), "apiVersion": resource.api_version, "metadata": metadata}
        if page.raw is not None:  # the items' JSON spliced into the list as they are (Registry.list raw)
            head, tail = codec.dumps({**envelope, "items": []})[:-2], b"]}\n"  # head ends in `"items":[`
            items = page.raw or [b""]
            items[0] = head + items[0]  # one copy of megabytes, the join: the envelope rides on the ends
            items[-1] = items[-1] + tail
            return web.Response(body=go_escape(b",".join(items)), content_type="application/json")
        return json_response({**envelope, "items": page.items})

    def _list_kind(self, resource: Resource) -> str:
        """`{Kind}List`, or the listKind a CRD accepted."""
        return self.registry.strategy(resource).list_kind

    def _printer(self, target: req.Target) -> tables.Printer:
        return tables.printer_for(target.resource, self.registry.strategy(target.resource))

    @staticmethod
    def _include_object(query: Mapping[str, str]) -> str:
        try:
            return tables.parse_include_object(query.get("includeObject"))
        except ValueError as exc:
            raise status.bad_request(str(exc)) from None

    @staticmethod
    def _filter(target: req.Target, query: Mapping[str, str]) -> Filter:
        field_selector = query.get("fieldSelector") or ""
        if target.name:  # a watch or list of one object is a metadata.name field selector upstream
            field_selector = ",".join(filter(None, [field_selector, f"metadata.name={target.name}"]))
        try:
            return parse_filter(target.resource, query.get("labelSelector"), field_selector)
        except SelectorError as exc:
            raise status.bad_request(str(exc)) from None

    async def _create(self, request: web.Request, target: req.Target) -> web.StreamResponse:
        body = req.decode_object(await _read(request), _content_type(request))
        dry_run = req.dry_run(request.query)
        if self.registry.strategy(target.resource).binds_pods:
            return await self._bind(target, body, dry_run=dry_run)
        manager = req.field_manager(request.query, request.headers.get("User-Agent", ""), "CreateOptions")
        obj = await asyncio.to_thread(self.registry.create, target.resource, target.namespace, body, dry_run=dry_run,
                                      manager=manager)
        return json_response(obj, 201)

    async def _delete_collection(self, request: web.Request, target: req.Target) -> web.StreamResponse:
        options = _delete_options(request.query, await _optional_body(request))
        flt = self._filter(target, request.query)
        items = await asyncio.to_thread(self.registry.delete_collection, target.resource, target.namespace, flt,
                                        options)
        resource = target.resource
        return json_response({"kind": self._list_kind(resource), "apiVersion": resource.api_version,
                              "metadata": {}, "items": items})

    # -- one object ---------------------------------------------------------------------------------

    async def _get(self, request: web.Request, target: req.Target) -> web.StreamResponse:
        if req.query_bool(request.query, "watch"):
            return await self._list(request, target)
        obj = await asyncio.to_thread(self.registry.must_get, target.resource, target.namespace, target.name)
        table = tables.parse_accept_table(request.headers.get("Accept"))
        if table is not None:
            return json_response(tables.table_for(
                target.resource, [obj], now=datetime.now(UTC),
                list_resource_version=obj["metadata"]["resourceVersion"],
                include_object=self._include_object(request.query), table_version=table.version,
                printer=self._printer(target)))
        return json_response(obj)

    async def _update(self, request: web.Request, target: req.Target, subresource: str = "") -> web.StreamResponse:
        body = req.decode_object(await _read(request), _content_type(request))
        manager = req.field_manager(request.query, request.headers.get("User-Agent", ""), "UpdateOptions")
        obj, created = await asyncio.to_thread(self.registry.update, target.resource, target.namespace, target.name,
                                               body, subresource=subresource, dry_run=req.dry_run(request.query),
                                               manager=manager)
        return json_response(obj, 201 if created else 200)

    async def _patch(self, request: web.Request, target: req.Target, subresource: str = "") -> web.StreamResponse:
        patch_type = req.PATCH_TYPES.get(request.content_type)
        accepted = [t for t, kind in req.PATCH_TYPES.items() if kind != "strategic" or not target.resource.custom]
        if patch_type is None or (patch_type == "strategic" and target.resource.custom):
            # custom resources have no patch strategies to merge by: upstream refuses the media type
            raise APIError(415, "UnsupportedMediaType",
                           f"the body of the request was in an unknown format - accepted media types include: "
                           f"{', '.join(accepted)}")
        manager = req.field_manager(request.query, request.headers.get("User-Agent", ""), "PatchOptions",
                                    apply=patch_type == "apply")
        document = req.decode_body(await _read(request), request.content_type)
        if patch_type == "apply":
            obj, created = await asyncio.to_thread(
                self.registry.apply, target.resource, target.namespace, target.name, document, manager=manager,
                force=req.query_bool(request.query, "force"), subresource=subresource,
                dry_run=req.dry_run(request.query))
            return json_response(obj, 201 if created else 200)
        obj = await asyncio.to_thread(self.registry.patch, target.resource, target.namespace, target.name,
                                      patch_type, document, subresource=subresource,
                                      dry_run=req.dry_run(request.query), manager=manager)
        return json_response(obj)

    async def _delete(self, request: web.Request, target: req.Target) -> web.StreamResponse:
        options = _delete_options(request.query, await _optional_body(request))
        obj, removed = await asyncio.to_thread(self.registry.delete, target.resource, target.namespace,
                                               target.name, options)
        return json_response(obj, 200 if removed else 202)

    # -- a version served as a view of the stored one (versionviews.py) ---------------------------

    async def _view(self, request: web.Request, target: req.Target, view: views.View) -> web.StreamResponse:
        """Serve `target` (a view's resource) through the stored resource, converting in and out."""
        if target.subresource not in ("", "status"):
            raise status.method_not_allowed()
        stored = dataclasses.replace(target, resource=storage_resource(target.resource))
        resource, method, query = stored.resource, request.method, request.query
        table = tables.parse_accept_table(request.headers.get("Accept"))
        if method == "GET" and (req.query_bool(query, "watch") or not target.name and target.subresource):
            raise status.method_not_allowed()
        if method == "GET" and not target.name:
            page = await asyncio.to_thread(self.registry.list, resource, stored.namespace, self._filter(stored, query),
                                           limit=req.query_int(query, "limit") or 0,
                                           continue_token=query.get("continue", ""),
                                           resource_version=req.resource_version(query))
            if table is not None:
                return json_response(tables.table_for(
                    resource, page.items, now=datetime.now(UTC), list_resource_version=page.resource_version,
                    include_object=self._include_object(query), table_version=table.version,
                    continue_token=page.continue_token))
            metadata: dict[str, Any] = {"resourceVersion": page.resource_version}
            if page.continue_token:
                metadata["continue"] = page.continue_token
            return json_response({"kind": f"{target.resource.kind}List", "apiVersion": target.resource.api_version,
                                  "metadata": metadata, "items": [view.from_storage(o) for o in page.items]})
        if method == "GET":
            obj = await asyncio.to_thread(self.registry.must_get, resource, stored.namespace, stored.name)
            if table is not None:
                return json_response(tables.table_for(
                    resource, [obj], now=datetime.now(UTC), list_resource_version=obj["metadata"]["resourceVersion"],
                    include_object=self._include_object(query), table_version=table.version))
            return json_response(view.from_storage(obj))
        dry_run = req.dry_run(query)
        if method == "POST" and not target.name:
            body = view.to_storage(req.decode_object(await _read(request), _content_type(request)))
            obj = await asyncio.to_thread(self.registry.create, resource, stored.namespace, body, dry_run=dry_run)
            return json_response(view.from_storage(obj), 201)
        if method == "PUT" and target.name:
            body = view.to_storage(req.decode_object(await _read(request), _content_type(request)))
            obj, created = await asyncio.to_thread(self.registry.update, resource, stored.namespace, stored.name,
                                                   body, subresource=stored.subresource, dry_run=dry_run)
            return json_response(view.from_storage(obj), 201 if created else 200)
        if method == "PATCH" and target.name:
            patch_type = req.PATCH_TYPES.get(request.content_type)
            if patch_type is None:
                raise APIError(415, "UnsupportedMediaType", "the body of the request was in an unknown format")
            document = req.decode_body(await _read(request), request.content_type)
            obj = await asyncio.to_thread(self.registry.patch, resource, stored.namespace, stored.name, patch_type,
                                          document, subresource=stored.subresource, dry_run=dry_run,
                                          transform=view.from_storage,
                                          apply_back=lambda _current, patched: view.to_storage(patched))
            return json_response(view.from_storage(obj))
        if method == "DELETE" and target.name and not target.subresource:
            options = _delete_options(query, await _optional_body(request))
            obj, removed = await asyncio.to_thread(self.registry.delete, resource, stored.namespace, stored.name,
                                                   options)
            converted = view.from_storage(obj) if obj.get("kind") == resource.kind else obj
            return json_response(converted, 200 if removed else 202)
        raise status.method_not_allowed()

    # -- subresources -------------------------------------------------------------------------------

    async def _subresource(self, request: web.Request, target: req.Target) -> web.StreamResponse:
        sub = target.subresource
        method = request.method
        if sub in ("status", "finalize", "approval"):
            if method == "GET":
                return await self._get(request, target)
            if method == "PUT":
                return await self._update(request, target, sub)
            return await self._patch(request, target, sub)
        if sub == "scale":
            return await self._scale(request, target)
        if sub == "binding":
            body = req.decode_object(await _read(request), _content_type(request))
            return await self._bind(target, body, dry_run=req.dry_run(request.query))
        if sub == "log":
            return await self._log(request, target)
        if sub in ("exec", "attach", "portforward"):
            return await self._stream(request, target)
        if sub == "eviction":
            body = req.decode_object(await _read(request), _content_type(request))
            options = _delete_options(request.query, eviction.parse(body, target.name))
            result = await asyncio.to_thread(eviction.evict, self.registry, target.namespace, target.name, options)
            return json_response(result, result.get("code") or 201)
        raise status.bad_request(f"{target.resource.plural}/{sub} needs a streaming connection to the node's "
                                 "kubelet (SPDY or WebSocket), which this server does not offer yet")

    async def _scale(self, request: web.Request, target: req.Target) -> web.StreamResponse:
        args = (target.resource, target.namespace, target.name)
        strategy = self.registry.strategy(target.resource)
        to_scale, from_scale = strategy.scale_of, strategy.apply_scale
        if request.method == "GET":
            return json_response(to_scale(await asyncio.to_thread(self.registry.must_get, *args)))
        if request.method == "PUT":
            body = req.decode_object(await _read(request), _content_type(request))
            patch_type = "merge"
            document = {"spec": {"replicas": (body.get("spec") or {}).get("replicas") if isinstance(
                body.get("spec"), dict) else None}}
            metadata = body.get("metadata")
            if metadata is not None and not isinstance(metadata, dict):
                raise status.bad_request("metadata: expected an object")
            wanted = (metadata or {}).get("resourceVersion")
            if wanted is not None and not isinstance(wanted, str):
                raise status.bad_request("metadata.resourceVersion: expected a string")
            if wanted:
                document["metadata"] = {"resourceVersion": wanted}
        else:
            patch_type = req.PATCH_TYPES.get(request.content_type, "")
            if not patch_type or patch_type == "apply":  # apply to /scale: not served
                raise status.unsupported_media_type(request.content_type)
            document = req.decode_body(await _read(request), request.content_type)
        options = "UpdateOptions" if request.method == "PUT" else "PatchOptions"
        manager = req.field_manager(request.query, request.headers.get("User-Agent", ""), options)
        obj = await asyncio.to_thread(self.registry.patch, *args, patch_type, document, transform=to_scale,
                                      apply_back=from_scale, dry_run=req.dry_run(request.query),
                                      manager=manager, fields_subresource="scale")
        return json_response(to_scale(obj))

    async def _bind(self, target: req.Target, body: dict[str, Any], *, dry_run: bool = False) -> web.StreamResponse:
        name = target.name
        if not name and isinstance(body.get("metadata"), dict):
            name = body["metadata"].get("name")
        node = (body.get("target") or {}).get("name") if isinstance(body.get("target"), dict) else None
        if not name or not isinstance(node, str) or not node:
            errors = [FieldError.required("target.name")] if not node else [FieldError.required("metadata.name")]
            raise status.invalid("Binding", name or "", errors)
        await asyncio.to_thread(binding.bind, self.registry, target.namespace, name, node, dry_run=dry_run)
        return json_response(status.success_status(), 201)

    async def _pod_container(self, request: web.Request, target: req.Target) -> tuple[str, str, NodeConnection]:
        """(container, node name, kubelet connection) for a pod subresource the kubelet serves; the container
        as upstream's validateContainer picks it (control/api/podlogoptions.py)."""
        assert PODS is not None
        pod = await asyncio.to_thread(self.registry.must_get, PODS, target.namespace, target.name)
        try:
            container = podlogoptions.choose_container(pod, request.query.get("container", ""))
        except ValueError as exc:
            raise status.bad_request(str(exc)) from None
        return (container, *await self._pod_node(target, pod))

    async def _pod_node(self, target: req.Target, pod: dict[str, Any]) -> tuple[str, NodeConnection]:
        """(node name, kubelet connection) of the node `pod` is bound to."""
        assert NODES is not None
        node_name = Pod(pod).spec.node_name
        if not node_name:
            raise status.bad_request(f"pod {target.name} does not have a host assigned")
        node = await asyncio.to_thread(self.registry.get, NODES, "", node_name)
        if node is None:  # upstream's node connection getter: the Node's own NotFound
            raise status.not_found("nodes", str(node_name))
        connection = node_connection(node)
        if connection is None:
            raise status.bad_request(f"node {node_name} has no address to reach its kubelet at")
        return str(node_name), connection

    async def _stream(self, request: web.Request, target: req.Target) -> web.StreamResponse:
        """`pods/exec`, `pods/attach`, `pods/portforward`: relayed to the kubelet's WebSocket endpoint
        (streaming/websocket.py)."""
        if target.subresource == "portforward":
            assert PODS is not None
            pod = await asyncio.to_thread(self.registry.must_get, PODS, target.namespace, target.name)
            node_name, connection = await self._pod_node(target, pod)
            path = f"/portForward/{target.namespace}/{target.name}"
        else:
            container, node_name, connection = await self._pod_container(request, target)
            path = f"/{target.subresource}/{target.namespace}/{target.name}/{container}"
        return await streaming.relay(request, self.kubelet, connection, path, node_name, target.subresource)

    async def _log(self, request: web.Request, target: req.Target) -> web.StreamResponse:
        """Proxy `pods/log` to the kubelet of the pod's node (upstream LogREST and LocationStreamer): the
        options checked here first, the kubelet's answer relayed chunk by chunk as it comes (a followed log
        is never held whole), a refusal from the kubelet turned into a Status as upstream's response
        checker does (its text is the message kubectl prints)."""
        try:
            options = podlogoptions.parse(request.query)
        except ValueError as exc:
            raise status.bad_request(str(exc)) from None
        errors = podlogoptions.validate(options)
        if errors:
            raise status.invalid("PodLogOptions", target.name, errors)
        container, node_name, connection = await self._pod_container(request, target)
        params = {k: v for k, v in request.query.items() if k in podlogoptions.PARAMETERS}
        url = connection.url(f"/containerLogs/{target.namespace}/{target.name}/{container}")
        try:
            async with self.kubelet.session() as session, session.get(url, params=params) as upstream:
                if not 200 <= upstream.status <= 206:
                    text = (await upstream.content.read(MAX_KUBELET_ERROR)).decode(errors="replace")
                    raise _kubelet_refusal(upstream.status, text, target.name)
                response = web.StreamResponse(headers={"Content-Type": upstream.headers.get("Content-Type",
                                                                                           "text/plain")})
                await response.prepare(request)
                try:
                    async for chunk in upstream.content.iter_any():
                        await response.write(chunk)
                except (ConnectionError, aiohttp.ClientPayloadError) as exc:  # either side went mid-stream
                    log.debug("pods/log stream of %s/%s ended: %s", target.namespace, target.name, exc)
                return response
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise status.service_unavailable(f"cannot reach the kubelet of node {node_name} at "
                                             f"{connection.host}:{connection.port}: {exc}") from None


def _as_protobuf(response: web.StreamResponse) -> web.StreamResponse:
    """A JSON answer re-encoded as protobuf for a client that accepts nothing else; 406 for an answer
    without a protobuf form (a Table, a kind outside the protobuf table's groups). Other media (logs) stay."""
    if (not isinstance(response, web.Response) or response.content_type != "application/json"
            or not isinstance(response.body, bytes)):
        return response
    encoded = protoencode.encode_object(json.loads(response.body))
    if encoded is None:
        raise status.not_acceptable()
    return web.Response(body=encoded, status=response.status, content_type=protoencode.MEDIA_TYPE)


def _kubelet_refusal(code: int, text: str, name: str) -> status.APIError:
    """upstream GenericHttpResponseChecker: 400 a BadRequest with the kubelet's text, 404 a NotFound for the
    pod, 500 an InternalError, anything else a Status with the kubelet's code and text."""
    text = text.strip()
    if code == 400:
        return status.bad_request(text)
    if code == 404:
        return status.APIError(404, "NotFound", text or f'pods "{name}" not found',
                               details={"name": name, "kind": "pods"})
    if code == 500:
        return status.APIError(500, "InternalError", f"Internal error occurred: {text}")
    return status.APIError(code, "", text or f"the kubelet answered {code}")


def _content_type(request: web.Request) -> str:
    """The body's media type as sent: aiohttp reads a missing header as application/octet-stream, but
    kubectl 1.20's typed clients send JSON bodies without one, and upstream reads "" as JSON."""
    return request.headers.get("Content-Type", "")


async def _read(request: web.Request) -> bytes:
    """The body, refusing more than upstream's 3 MiB with a 413 before reading it all."""
    if request.content_length is not None and request.content_length > req.MAX_BODY_BYTES:
        raise status.too_large(req.MAX_BODY_BYTES)
    chunks: list[bytes] = []
    size = 0
    while chunk := await request.content.read(req.MAX_BODY_BYTES + 1 - size):  # read() may return a part
        chunks.append(chunk)
        size += len(chunk)
        if size > req.MAX_BODY_BYTES:
            raise status.too_large(req.MAX_BODY_BYTES)
    body = b"".join(chunks)
    audit_context.note_request_body(body)
    return body


async def _optional_body(request: web.Request) -> Any:
    data = await _read(request)
    if not data.strip():
        return None
    return req.decode_body(data, request.content_type if request.content_type != "application/octet-stream"
                           else "application/json")


def _delete_options(query: MultiMapping[str], body: Any) -> DeleteOptions:
    options = req.delete_options(query, body)
    preconditions = options.get("preconditions") or {}
    return DeleteOptions(grace_period_seconds=options.get("gracePeriodSeconds"),
                         propagation_policy=options.get("propagationPolicy"),
                         precondition_uid=preconditions.get("uid"),
                         precondition_resource_version=preconditions.get("resourceVersion"),
                         dry_run=req.dry_run(query) or options.get("dryRun") == ["All"])
