"""pods/eviction: delete a pod only if no PodDisruptionBudget forbids it (upstream
pkg/registry/core/pod/storage/eviction.go, EvictionREST.Create). A REST storage beside the generic store,
as binding.py; the decisions are control/api/disruption.py's.

Steps, as upstream:
1. The body is a policy/v1 (or, for kubectl up to 1.21, policy/v1beta1) Eviction naming the URL's pod;
   its `deleteOptions` (and the request's dryRun) are the options of the pod's deletion.
2. A pod that finished, is Pending or is already being deleted is deleted at once; no PDB is consulted
   (a live pod's deletion carries its resourceVersion as a precondition, so a pod that became Running
   meanwhile is judged again; conflicts are retried).
3. The PDBs of the namespace whose (non-empty) selector matches the pod: more than one is a Failure
   Status with code 500, none means delete.
4. A pod that is not Ready while the budget holds is deleted under a resourceVersion precondition,
   without a decrement (a conflict answers 429 so the client retries).
5. Else the PDB must allow a disruption: its status is written with `disruptionsAllowed` one less and the
   pod in `disruptedPods`, compare-and-swap on the PDB's resourceVersion (a lost race re-reads and
   decides again, upstream's 20 retries); refused: 429 TooManyRequests with the DisruptionBudget cause.
6. The pod is deleted with the eviction's options; the answer is a Status Success (201).

Departure: the PDB's `unhealthyPodEvictionPolicy` (AlwaysAllow) is accepted by validation but the
handler always follows the default (IfHealthyBudget), as upstream did before it existed.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from control.api import disruption
from control.apiserver import status
from control.apiserver.registry.store import DeleteOptions, Registry
from control.apiserver.resources import by_path
from control.apiserver.status import APIError

PODS = by_path("", "v1", "pods")
PDBS = by_path("policy", "v1", "poddisruptionbudgets")
EVICTION_API_VERSIONS = ("policy/v1", "policy/v1beta1")
RETRIES = 20  # upstream EvictionsRetry.Steps
RETRY_SECONDS = 0.5  # upstream EvictionsRetry.Duration


def parse(body: Any, name: str) -> dict[str, Any]:
    """The Eviction's deleteOptions, after upstream's checks of kind, version and name."""
    if not isinstance(body, dict):
        raise status.bad_request("the body must be a JSON object")
    if body.get("apiVersion") not in (None, *EVICTION_API_VERSIONS) or body.get("kind") not in (None, "Eviction"):
        raise status.bad_request(f"not a Eviction object: {body.get('apiVersion')}, Kind={body.get('kind')}")
    metadata = body.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("name") != name:
        raise status.bad_request("name in URL does not match name in Eviction object")
    options = body.get("deleteOptions")
    if options is not None and not isinstance(options, dict):
        raise status.bad_request("deleteOptions must be an object")
    return options or {}


def _refused(refusal: disruption.Refusal) -> APIError:
    details: dict[str, Any] = {}
    if refusal.cause:
        details["causes"] = [{"reason": disruption.DISRUPTION_BUDGET_CAUSE, "message": refusal.cause}]
    if refusal.code == 429:
        details["retryAfterSeconds"] = refusal.retry_after_seconds
    return APIError(refusal.code, refusal.reason, refusal.message, details=details or None)


def _with_resource_version(options: DeleteOptions, resource_version: str) -> DeleteOptions:
    return DeleteOptions(grace_period_seconds=options.grace_period_seconds,
                         propagation_policy=options.propagation_policy, precondition_uid=options.precondition_uid,
                         precondition_resource_version=resource_version, dry_run=options.dry_run)


def _delete_ignoring_pdb(registry: Registry, namespace: str, name: str,
                         options: DeleteOptions) -> dict[str, Any] | None:
    """Step 2: the pod, when it is not one a PDB can protect (None once deleted)."""
    assert PODS is not None
    for _ in range(RETRIES):
        pod = registry.must_get(PODS, namespace, name)
        if not disruption.can_ignore_pdb(pod):
            return pod
        chosen = options
        if disruption.should_enforce_resource_version(pod) and options.precondition_resource_version is None:
            chosen = _with_resource_version(options, pod["metadata"]["resourceVersion"])
        try:
            registry.delete(PODS, namespace, name, chosen)
            return None
        except APIError as exc:
            if exc.code != 409 or options.precondition_resource_version is not None:
                raise
        time.sleep(RETRY_SECONDS)
    raise status.conflict("pods", name, status.STALE_OBJECT)


def _decrement(registry: Registry, pdb: dict[str, Any], pod_name: str, *, now: datetime, dry_run: bool) -> None:
    """Step 5, retried on a lost compare-and-swap with a fresh read."""
    assert PDBS is not None
    metadata = pdb["metadata"]
    for attempt in range(RETRIES):
        decided = disruption.check_and_decrement(pdb, pod_name, now=now, dry_run=dry_run)
        if isinstance(decided, disruption.Refusal):
            raise _refused(decided)
        if dry_run:
            return
        try:
            registry.update(PDBS, metadata["namespace"], metadata["name"], {**pdb, "status": decided},
                            subresource="status")
            return
        except APIError as exc:
            if exc.code != 409:
                raise
        if attempt < RETRIES - 1:
            time.sleep(RETRY_SECONDS)
            pdb = registry.must_get(PDBS, metadata["namespace"], metadata["name"])
    raise APIError(504, "Timeout", f'couldn\'t update PodDisruptionBudget "{metadata["name"]}" due to conflicts',
                   details={"retryAfterSeconds": 10})


def evict(registry: Registry, namespace: str, name: str, options: DeleteOptions) -> dict[str, Any]:
    """Evict pod `name`: the Status to answer with (its `code`, else 201), or an APIError (module notes)."""
    assert PODS is not None and PDBS is not None
    pod = _delete_ignoring_pdb(registry, namespace, name, options)
    if pod is None:
        return status.success_status()
    pdbs = [p for p in registry.list_all(PDBS, namespace) if disruption.eviction_selects(p, pod)]
    if len(pdbs) > 1:  # upstream answers with this Status as the result (no reason), not as an error
        return {**status.success_status(), "status": "Failure", "message": disruption.MULTIPLE_PDBS_MESSAGE,
                "code": 500}
    chosen = options
    unready = bool(pdbs) and disruption.unready_within_budget(pod, pdbs[0])
    if unready:
        chosen = _with_resource_version(options, pod["metadata"]["resourceVersion"])
    elif pdbs:
        _decrement(registry, pdbs[0], name, now=registry.clock(), dry_run=options.dry_run)
    try:
        registry.delete(PODS, namespace, name, chosen)
    except APIError as exc:
        if exc.code == 409 and unready and options.precondition_resource_version is None:
            raise _refused(disruption.still_processing(pdbs[0]["metadata"]["name"])) from None
        raise
    return status.success_status()
