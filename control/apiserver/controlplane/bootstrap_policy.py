"""The bootstrap RBAC policy written at every start (upstream: the `rbac/bootstrap-roles` post-start hook of
pkg/registry/rbac/rest/storage_rbac.go): the decisions are control/apiserver/authorization/reconcile.py's,
the writes go through the registry with no requester (the server itself), so escalation checks pass."""

from __future__ import annotations

import logging
from typing import Any

from control.apiserver import resources
from control.apiserver.authorization import bootstrappolicy, reconcile
from control.apiserver.registry.store import DeleteOptions, Registry
from control.apiserver.status import APIError

log = logging.getLogger(__name__)


def reconcile_policy(registry: Registry) -> int:
    """Create or complete every bootstrap ClusterRole and ClusterRoleBinding; the number of writes."""
    writes = 0
    for plural, wanted, decide in (
            ("clusterroles", bootstrappolicy.all_cluster_roles(), reconcile.reconcile_role),
            ("clusterrolebindings", bootstrappolicy.all_cluster_role_bindings(), reconcile.reconcile_binding)):
        resource = resources.by_path(bootstrappolicy.RBAC, "v1", plural)
        assert resource is not None

        def get(name: str, resource: resources.Resource = resource) -> dict[str, Any] | None:
            return registry.get(resource, "", name)

        def write(plan: reconcile.Plan, resource: resources.Resource = resource, plural: str = plural) -> None:
            name = plan.obj["metadata"]["name"]
            try:
                if plan.action is reconcile.Action.UPDATE:
                    registry.update(resource, "", name, plan.obj)
                else:
                    if plan.action is reconcile.Action.RECREATE:
                        registry.delete(resource, "", name, DeleteOptions())
                    registry.create(resource, "", plan.obj)
            except APIError as exc:  # another server wrote it first: the next start reconciles again
                log.warning("bootstrap policy: %s %s: %s", plural, name, exc.message)

        writes += reconcile.reconcile_all(wanted, get, write, decide)
    return writes
