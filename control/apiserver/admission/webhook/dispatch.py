"""The MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins.

Upstream: k8s.io/apiserver/pkg/admission/plugin/webhook/generic/webhook.go (`Dispatch`: the webhooks of
every configuration, configurations in name order, `ShouldCallHook`), mutating/dispatcher.go (one webhook
after the other; a JSONPatch answer applied before the next is called; `reinvocationPolicy: IfNeeded`
webhooks called once more when a later webhook changed the object) and validating/dispatcher.go (every
matching webhook at once, the first refusal answered).

Per webhook: rules (matchPolicy Equivalent: the same resource in another served version), namespaceSelector,
objectSelector, then matchConditions (CEL; false skips the webhook); a dry run meets a webhook whose
sideEffects is not None/NoneOnDryRun with 400 `admission webhook "x" does not support dry run`; the call has
`timeoutSeconds` (10 by default); a failed call (unreachable, timeout, a malformed answer) is skipped under
`failurePolicy: Ignore` and a 500 `Internal error occurred: failed calling webhook "x": ...` under `Fail`
(the default); a refusal is the webhook's Status, at least 400, `admission webhook "x" denied the request:
<message>`. Warnings go to the client as `Warning` headers (on create, update, patch and delete; the
request's recorder carries them, control/apiserver/warning.py); audit annotations are kept on the
attributes as `<webhook name>/<key>`, as upstream's AddAnnotation, with `patch.webhook.admission.k8s.io/
round_<r>_index_<i>` for every patch applied and `failed-open.{mutating,validating}.webhook.admission.k8s.io/
round_0_index_<i>` for every failure ignored.

Departures: in-process mutating plugins are not run again when webhooks are reinvoked; webhook
configurations are listed from storage per write (upstream keeps them in an informer); CONNECT is never
admitted (the chain is entered for writes only).
"""

from __future__ import annotations

import contextvars
import json
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from control.apiserver import status, warning
from control.apiserver.admission.chain import Attributes, Operation, Reader
from control.apiserver.admission.webhook import celexpr, client, matching, review
from control.apiserver.admission.webhook.matching import GroupVersionResource
from control.apiserver.authentication import tokens as authn
from control.apiserver.codec import jsoncodec as codec
from control.apiserver.fieldmanager.patch import PatchError
from control.apiserver.resources import Resource, by_path
from control.apiserver.status import APIError

log = logging.getLogger(__name__)

MUTATING = by_path("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations")
VALIDATING = by_path("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")
NAMESPACES = by_path("", "v1", "namespaces")
DEFAULT_TIMEOUT_SECONDS = 10
_DRY_RUN_SAFE = ("None", "NoneOnDryRun")

Served = Callable[[], Iterable[Resource]]


@dataclass(frozen=True, slots=True)
class Hook:
    """One webhook of one configuration, with its place (`index` counts across configurations)."""

    configuration: str
    index: int
    spec: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def fails_open(self) -> bool:
        return self.spec.get("failurePolicy") == "Ignore"

    @property
    def timeout(self) -> float:
        value = self.spec.get("timeoutSeconds")
        return float(value) if isinstance(value, int) and value > 0 else float(DEFAULT_TIMEOUT_SECONDS)


def hooks(configurations: Iterable[Mapping[str, Any]]) -> list[Hook]:
    """Every webhook of the configurations, configurations in name order, webhooks in their order."""
    ordered = sorted(configurations, key=lambda c: str((c.get("metadata") or {}).get("name", "")))
    found: list[Hook] = []
    for configuration in ordered:
        for spec in configuration.get("webhooks") or []:
            if isinstance(spec, Mapping):
                found.append(Hook(str(configuration["metadata"].get("name", "")), len(found), spec))
    return found


def kind_of(resource: Resource, subresource: str, gvr: GroupVersionResource) -> review.Kind:
    sub = resource.subresources.get(subresource) if subresource else None
    if sub is not None and (sub.group or sub.version or sub.kind != resource.kind):
        return review.Kind(sub.group or resource.group, sub.version or gvr.version, sub.kind)
    return review.Kind(gvr.group, gvr.version, resource.kind)


class Webhooks:
    """What both plugins share: reading the configurations and the request, matching, calling one hook."""

    def __init__(self, reader: Reader, configurations: Resource | None, *, endpoint_routing: bool,
                 served: Served | None = None, poster: client.Poster | None = None) -> None:
        assert configurations is not None
        self._reader = reader
        self._configurations = configurations
        self._endpoint_routing = endpoint_routing
        self._served = served
        self._poster = poster or client.Poster()

    def configured(self) -> list[Hook]:
        return hooks(self._reader.list_all(self._configurations, ""))

    def request(self, attributes: Attributes, obj: Mapping[str, Any] | None,
                 old: Mapping[str, Any] | None) -> matching.Request:
        resource = attributes.resource
        gvr = GroupVersionResource(resource.group, resource.version, resource.plural)
        namespace = attributes.namespace
        labels = None
        if namespace and resource.namespaced:
            assert NAMESPACES is not None
            found = self._reader.get(NAMESPACES, "", namespace)
            labels = ((found or {}).get("metadata") or {}).get("labels") or {}
        return matching.Request(attributes.operation.value, gvr, attributes.subresource,
                                namespace if resource.namespaced else "", obj, old, labels)

    def _equivalents(self, gvr: GroupVersionResource) -> list[GroupVersionResource]:
        if self._served is None:
            return []
        return [GroupVersionResource(r.group, r.version, r.plural) for r in self._served()
                if r.group == gvr.group and r.plural == gvr.resource and r.version != gvr.version]

    def matched(self, hook: Hook, request: matching.Request) -> GroupVersionResource | None:
        gvr = matching.matched_resource(hook.spec, request, self._equivalents(request.gvr))
        if gvr is None or not matching.namespace_selected(hook.spec, request):
            return None
        return gvr if matching.object_selected(hook.spec, request) else None

    def _subject(self, attributes: Attributes, request: matching.Request, gvr: GroupVersionResource) -> review.Subject:
        user = authn.current_user.get()
        return review.Subject(
            kind=kind_of(attributes.resource, attributes.subresource, gvr), resource=gvr,
            request_kind=kind_of(attributes.resource, attributes.subresource, request.gvr),
            request_resource=request.gvr, subresource=attributes.subresource, name=attributes.name,
            namespace=attributes.namespace, operation=attributes.operation.value,
            user=user.to_json() if user is not None else {}, obj=request.obj, old=request.old,
            dry_run=attributes.dry_run)

    def call(self, hook: Hook, attributes: Attributes, request: matching.Request,
             gvr: GroupVersionResource) -> review.Verdict | None:
        """Ask one matched hook; None when its matchConditions skip it. CallError for a failed call (the
        caller applies the failurePolicy), APIError for what no policy excuses."""
        subject = self._subject(attributes, request, gvr)
        uid = str(uuid.uuid4())
        admission_request = review.admission_request(uid, subject)
        conditions = hook.spec.get("matchConditions") or []
        if conditions:
            names = celexpr.activation({"object": request.obj, "oldObject": request.old,
                                        "request": admission_request})
            try:
                if not celexpr.match_conditions(conditions, names):
                    return None
            except celexpr.ExpressionError as exc:
                raise review.CallError(hook.name, f"failed to evaluate match conditions: {exc}") from None
        if attributes.dry_run and hook.spec.get("sideEffects") not in _DRY_RUN_SAFE:
            raise status.bad_request(f'admission webhook "{hook.name}" does not support dry run')
        api_version = review.review_version(hook.spec.get("admissionReviewVersions") or [])
        body = codec.dumps(review.admission_review(admission_request, api_version=api_version))
        try:
            target = client.resolve(hook.spec.get("clientConfig") or {}, self._reader,
                                    endpoint_routing=self._endpoint_routing, timeout=hook.timeout)
            answer = self._poster.post(target, body, timeout=hook.timeout)
        except (client.ResolveError, RuntimeError) as exc:
            raise review.CallError(hook.name, f"failed to call webhook: {exc}") from None
        verdict = review.read_response(hook.name, answer, uid=uid, api_version=api_version)
        for text in verdict.warnings:
            _warn(text)
        for key, value in verdict.audit_annotations.items():
            attributes.annotations[f"{hook.name}/{key}"] = value
        return verdict


def _warn(text: str) -> None:
    if text.strip():
        warning.add_warning(text)


def _failed(hook: Hook, error: review.CallError, attributes: Attributes, kind: str) -> APIError | None:
    """failurePolicy: None (go on) under Ignore, the 500 under Fail."""
    if hook.fails_open:
        log.warning("%s; failing open (failurePolicy Ignore)", error)
        attributes.annotations[f"failed-open.{kind}.webhook.admission.k8s.io/round_0_index_{hook.index}"] = hook.name
        return None
    return status.internal_error(str(error))


def _old(reader: Reader, attributes: Attributes) -> dict[str, Any] | None:
    """The object a DELETE removes (the chain is given none), as upstream's review carries it."""
    if attributes.old is not None or attributes.operation is not Operation.DELETE:
        return attributes.old
    return reader.get(attributes.resource, attributes.namespace, attributes.name)


class MutatingWebhooks:
    """Last of the mutating plugins: webhooks one after the other, each seeing the previous one's patch."""

    name = "MutatingAdmissionWebhook"

    def __init__(self, reader: Reader, *, endpoint_routing: bool, served: Served | None = None,
                 poster: client.Poster | None = None) -> None:
        self._reader = reader
        self._webhooks = Webhooks(reader, MUTATING, endpoint_routing=endpoint_routing, served=served, poster=poster)

    def admit(self, attributes: Attributes) -> None:
        if matching.exempt(GroupVersionResource(attributes.resource.group, "", attributes.resource.plural)):
            return
        found = self._webhooks.configured()
        if not found:
            return
        old = _old(self._reader, attributes)
        changed_after: dict[int, bool] = {}  # IfNeeded hooks called in round 0 → changed since
        for hook in found:
            changed = self._one(hook, attributes, old, round_=0)
            for index in changed_after:
                changed_after[index] = changed_after[index] or bool(changed)
            if changed is not None and hook.spec.get("reinvocationPolicy") == "IfNeeded":
                changed_after[hook.index] = False
        for hook in found:
            if changed_after.get(hook.index):
                self._one(hook, attributes, old, round_=1)

    def _one(self, hook: Hook, attributes: Attributes, old: Mapping[str, Any] | None, *, round_: int) -> bool | None:
        """Call one hook if it matches: None when it was not called, else whether it changed the object."""
        request = self._webhooks.request(attributes, attributes.obj, old)
        gvr = self._webhooks.matched(hook, request)
        if gvr is None:
            return None
        try:
            verdict = self._webhooks.call(hook, attributes, request, gvr)
        except review.CallError as exc:
            error = _failed(hook, exc, attributes, "mutating")
            if error is not None:
                raise error from None
            return None
        if verdict is None:
            return None
        if not verdict.allowed:
            raise review.denied(hook.name, verdict.status)
        obj = attributes.obj
        if not verdict.patch or obj is None:
            return False
        try:
            patched = review.apply_patch(obj, verdict.patch)
        except PatchError as exc:
            raise status.internal_error(str(exc)) from None
        if patched == obj:
            return False
        obj.clear()
        obj.update(patched)
        attributes.annotations[f"patch.webhook.admission.k8s.io/round_{round_}_index_{hook.index}"] = json.dumps(
            {"configuration": hook.configuration, "webhook": hook.name, "patch": verdict.patch,
             "patchType": "JSONPatch"}, separators=(",", ":"))
        return True


class ValidatingWebhooks:
    """After the in-process validators: every matching webhook at once; the first refusal (in webhook order)
    is the answer."""

    name = "ValidatingAdmissionWebhook"

    def __init__(self, reader: Reader, *, endpoint_routing: bool, served: Served | None = None,
                 poster: client.Poster | None = None, workers: int = 8) -> None:
        self._reader = reader
        self._webhooks = Webhooks(reader, VALIDATING, endpoint_routing=endpoint_routing, served=served,
                                  poster=poster)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="validating-webhook")

    def validate(self, attributes: Attributes, hold: ExitStack) -> None:
        if matching.exempt(GroupVersionResource(attributes.resource.group, "", attributes.resource.plural)):
            return
        found = self._webhooks.configured()
        if not found:
            return
        request = self._webhooks.request(attributes, attributes.obj, _old(self._reader, attributes))
        matched = [(hook, gvr) for hook in found if (gvr := self._webhooks.matched(hook, request)) is not None]
        if not matched:
            return
        if len(matched) == 1:
            errors: Sequence[APIError | None] = [self._one(matched[0][0], matched[0][1], attributes, request)]
        else:
            # each call in a copy of this request's context: the user, and the record warnings go to
            futures = [self._pool.submit(contextvars.copy_context().run, self._one, hook, gvr, attributes, request)
                       for hook, gvr in matched]
            errors = [future.result() for future in futures]
        for error in errors:
            if error is not None:
                raise error

    def _one(self, hook: Hook, gvr: GroupVersionResource, attributes: Attributes,
             request: matching.Request) -> APIError | None:
        try:
            verdict = self._webhooks.call(hook, attributes, request, gvr)
        except review.CallError as exc:
            return _failed(hook, exc, attributes, "validating")
        except APIError as exc:
            return exc
        if verdict is None or verdict.allowed:
            return None
        return review.denied(hook.name, verdict.status)
