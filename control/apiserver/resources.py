"""The table of resources the API server serves, and where each one lives in storage.

Upstream has no single file for this: each group's REST storage (pkg/registry/*/rest/storage_*.go) registers
its resources, and the discovery documents (`/api/v1`, `/apis/apps/v1`, ...) are generated from what got
registered. Here the table is written out once and everything else (routing, discovery, tables, storage
keys) reads it, so a resource cannot be routable but undiscoverable or the other way round.

Names, kinds, namespaced flags, short names, categories and verbs are copied from what a v1.30 cluster
answers in discovery, because clients act on them: kubectl resolves `po`/`deploy` through `shortNames`,
`kubectl get all` lists every resource with category `all`, `kubectl delete --all` needs `deletecollection`,
and `kubectl scale` finds the group/version/kind of the Scale it gets back in the `deployments/scale` entry.

Storage keys are `/registry/{plural}/{namespace}/{name}` (`/registry/{plural}/{name}` when cluster-scoped),
the layout control/storage/interface.py documents. Upstream uses the same shape with the bare resource
name and no group for almost every resource (`/registry/deployments/...`, `/registry/leases/...`); it
differs only for a few historical names (`/registry/services/specs/`, `/registry/minions/` for nodes,
`/registry/controllers/` for replication controllers), which we do not copy: no tool reads our keys
expecting upstream's. Plurals are unique across the served groups, so the group is not needed in the key.

Custom resources (apiextensions.k8s.io CustomResourceDefinitions) are added and taken away while the
server runs: each server's `ServedResources` (owned by its registry) holds them after the static table
(a built-in always wins); the module's `by_path` and `by_kind` answer for the static table alone. Their
keys are upstream's `/registry/{group}/{plural}/...`: a CRD may pick a plural a built-in group already uses
(`foos.a.io` and `foos.b.io`, or `pods.example.com`), and a plural never contains a dot, so the two layouts
cannot meet.
Every version of one custom resource shares one prefix: objects are stored once, at the storage version.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from control.apimachinery.meta import group_version

# Upstream's verb order in discovery (sorted); kubectl only tests membership, but diffs stay readable.
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
# Namespaces have no deletecollection upstream: deleting every namespace at once is not offered.
NAMESPACE_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")


@dataclass(frozen=True, slots=True)
class SubResource:
    """A subresource whose kind may differ from its parent's (`deployments/scale` is an autoscaling/v1 Scale).

    `group` and `version` are empty when they are the parent's, as upstream leaves them out of discovery.
    """

    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = ""


@dataclass(frozen=True, slots=True)
class Resource:
    """One served resource (upstream: a metav1.APIResource plus its subresources)."""

    group: str  # "" for the core group
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: Mapping[str, SubResource] = field(default_factory=lambda: MappingProxyType({}))
    custom: bool = False  # served for a CustomResourceDefinition (ServedResources below), not built in
    # A version served as a converted view of the stored one (control/apiserver/endpoints/versionviews.py):
    # the version the objects are stored in, "" for the storage version itself.
    storage_version: str = ""

    @property
    def api_version(self) -> str:
        """`v1` for the core group, `apps/v1` otherwise: what objects carry in `apiVersion`."""
        return f"{self.group}/{self.version}" if self.group else self.version


def _subresources(**entries: SubResource) -> Mapping[str, SubResource]:
    return MappingProxyType(entries)


def _status(kind: str) -> SubResource:
    return SubResource(kind, STATUS_VERBS)


_SCALE = SubResource("Scale", STATUS_VERBS, group="autoscaling", version="v1")


def _core(plural: str, singular: str, kind: str, namespaced: bool = True, **kwargs: Any) -> Resource:
    return Resource("", "v1", plural, singular, kind, namespaced, **kwargs)


RESOURCES: tuple[Resource, ...] = (
    _core("namespaces", "namespace", "Namespace", False, short_names=("ns",), verbs=NAMESPACE_VERBS,
          subresources=_subresources(status=_status("Namespace"),
                                     finalize=SubResource("Namespace", ("update",)))),
    _core("pods", "pod", "Pod", short_names=("po",), categories=("all",),
          subresources=_subresources(status=_status("Pod"), binding=SubResource("Binding", ("create",)),
                                     log=SubResource("Pod", ("get",)),
                                     exec=SubResource("PodExecOptions", ("create", "get")),
                                     attach=SubResource("PodAttachOptions", ("create", "get")),
                                     portforward=SubResource("PodPortForwardOptions", ("create", "get")),
                                     eviction=SubResource("Eviction", ("create",), group="policy", version="v1"))),
    _core("services", "service", "Service", short_names=("svc",), categories=("all",),
          subresources=_subresources(status=_status("Service"))),
    _core("endpoints", "endpoints", "Endpoints", short_names=("ep",)),
    _core("nodes", "node", "Node", False, short_names=("no",), subresources=_subresources(status=_status("Node"))),
    _core("configmaps", "configmap", "ConfigMap", short_names=("cm",)),
    _core("secrets", "secret", "Secret"),
    _core("events", "event", "Event", short_names=("ev",)),
    _core("resourcequotas", "resourcequota", "ResourceQuota", short_names=("quota",),
          subresources=_subresources(status=_status("ResourceQuota"))),
    _core("limitranges", "limitrange", "LimitRange", short_names=("limits",)),
    _core("serviceaccounts", "serviceaccount", "ServiceAccount", short_names=("sa",),
          subresources=_subresources(token=SubResource("TokenRequest", ("create",), group="authentication.k8s.io",
                                                       version="v1"))),
    _core("replicationcontrollers", "replicationcontroller", "ReplicationController", short_names=("rc",),
          categories=("all",), subresources=_subresources(status=_status("ReplicationController"), scale=_SCALE)),
    _core("persistentvolumes", "persistentvolume", "PersistentVolume", False, short_names=("pv",),
          subresources=_subresources(status=_status("PersistentVolume"))),
    _core("persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", short_names=("pvc",),
          subresources=_subresources(status=_status("PersistentVolumeClaim"))),
    # Deprecated upstream in favour of pods/binding but still served; kube-scheduler once used it.
    _core("bindings", "binding", "Binding", verbs=("create",)),
    Resource("apps", "v1", "deployments", "deployment", "Deployment", True, short_names=("deploy",),
             categories=("all",), subresources=_subresources(status=_status("Deployment"), scale=_SCALE)),
    Resource("apps", "v1", "replicasets", "replicaset", "ReplicaSet", True, short_names=("rs",),
             categories=("all",), subresources=_subresources(status=_status("ReplicaSet"), scale=_SCALE)),
    Resource("apps", "v1", "daemonsets", "daemonset", "DaemonSet", True, short_names=("ds",),
             categories=("all",), subresources=_subresources(status=_status("DaemonSet"))),
    Resource("apps", "v1", "statefulsets", "statefulset", "StatefulSet", True, short_names=("sts",),
             categories=("all",), subresources=_subresources(status=_status("StatefulSet"), scale=_SCALE)),
    Resource("apps", "v1", "controllerrevisions", "controllerrevision", "ControllerRevision", True),
    Resource("batch", "v1", "jobs", "job", "Job", True, categories=("all",),
             subresources=_subresources(status=_status("Job"))),
    Resource("batch", "v1", "cronjobs", "cronjob", "CronJob", True, short_names=("cj",), categories=("all",),
             subresources=_subresources(status=_status("CronJob"))),
    Resource("autoscaling", "v2", "horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler",
             True, short_names=("hpa",), categories=("all",),
             subresources=_subresources(status=_status("HorizontalPodAutoscaler"))),
    Resource("autoscaling", "v1", "horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler",
             True, short_names=("hpa",), categories=("all",),
             subresources=_subresources(status=_status("HorizontalPodAutoscaler")), storage_version="v2"),
    Resource("certificates.k8s.io", "v1", "certificatesigningrequests", "certificatesigningrequest",
             "CertificateSigningRequest", False, short_names=("csr",),
             subresources=_subresources(approval=_status("CertificateSigningRequest"),
                                        status=_status("CertificateSigningRequest"))),
    Resource("networking.k8s.io", "v1", "ingressclasses", "ingressclass", "IngressClass", False),
    Resource("networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", True, short_names=("ing",),
             subresources=_subresources(status=_status("Ingress"))),
    Resource("networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy", True,
             short_names=("netpol",)),
    Resource("storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", False, short_names=("sc",)),
    Resource("storage.k8s.io", "v1", "csidrivers", "csidriver", "CSIDriver", False),
    Resource("storage.k8s.io", "v1", "csinodes", "csinode", "CSINode", False),
    Resource("storage.k8s.io", "v1", "volumeattachments", "volumeattachment", "VolumeAttachment", False,
             subresources=_subresources(status=_status("VolumeAttachment"))),
    Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration",
             "MutatingWebhookConfiguration", False, categories=("api-extensions",)),
    Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
             "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", False,
             categories=("api-extensions",)),
    Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "validatingadmissionpolicy",
             "ValidatingAdmissionPolicy", False, categories=("api-extensions",),
             subresources=_subresources(status=_status("ValidatingAdmissionPolicy"))),
    Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
             "validatingadmissionpolicybinding", "ValidatingAdmissionPolicyBinding", False,
             categories=("api-extensions",)),
    Resource("apiregistration.k8s.io", "v1", "apiservices", "apiservice", "APIService", False,
             categories=("api-extensions",), subresources=_subresources(status=_status("APIService"))),
    Resource("node.k8s.io", "v1", "runtimeclasses", "runtimeclass", "RuntimeClass", False),
    Resource("coordination.k8s.io", "v1", "leases", "lease", "Lease", True),
    Resource("scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", False,
             short_names=("pc",)),
    Resource("discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice", True),
    Resource("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", True,
             short_names=("pdb",), subresources=_subresources(status=_status("PodDisruptionBudget"))),
    Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", False),
    Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding",
             False),
    Resource("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", True),
    Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", True),
    Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
             "CustomResourceDefinition", False, short_names=("crd", "crds"), categories=("api-extensions",),
             subresources=_subresources(status=_status("CustomResourceDefinition"))),
)

# Served by control/apiserver/registry/componentstatus.py from live health checks, never stored (upstream
# pkg/registry/core/componentstatus): in discovery and tables, not in RESOURCES.
COMPONENT_STATUSES = _core("componentstatuses", "componentstatus", "ComponentStatus", False,
                           short_names=("cs",), verbs=("get", "list"))

# Served by control/apiserver/registry/metricsapi.py from the kubelets and never stored, so they are in discovery
# (kubectl top looks for the group there) but not in RESOURCES, which routing, storage and controllers read.
METRICS_RESOURCES: tuple[Resource, ...] = (
    Resource("metrics.k8s.io", "v1beta1", "nodes", "", "NodeMetrics", False, verbs=("get", "list")),
    Resource("metrics.k8s.io", "v1beta1", "pods", "", "PodMetrics", True, verbs=("get", "list")),
)

# Served by control/apiserver/authorization/reviews.py (and authentication/tokens.py for TokenReviews): created
# and answered, never stored (upstream pkg/registry/authorization, pkg/registry/authentication), so in discovery
# (kubectl auth can-i and whoami look for them there) but not in RESOURCES.
REVIEW_RESOURCES: tuple[Resource, ...] = (
    Resource("authentication.k8s.io", "v1", "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview", False,
             verbs=("create",)),
    Resource("authentication.k8s.io", "v1", "tokenreviews", "tokenreview", "TokenReview", False, verbs=("create",)),
    Resource("authorization.k8s.io", "v1", "localsubjectaccessreviews", "localsubjectaccessreview",
             "LocalSubjectAccessReview", True, verbs=("create",)),
    Resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "selfsubjectaccessreview",
             "SelfSubjectAccessReview", False, verbs=("create",)),
    Resource("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "selfsubjectrulesreview",
             "SelfSubjectRulesReview", False, verbs=("create",)),
    Resource("authorization.k8s.io", "v1", "subjectaccessreviews", "subjectaccessreview", "SubjectAccessReview",
             False, verbs=("create",)),
)

_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
_BY_KIND = {(r.group, r.version, r.kind): r for r in RESOURCES}


class ServedResources:
    """The resources one API server serves: the static table, then the custom resources installed while it
    runs (every served version of each CustomResourceDefinition, by definition name). Each server's
    registry owns one, so two servers in one process never see each other's custom resources.

    A built-in always wins a lookup. Readers get immutable snapshots, writers replace them under a lock
    (reads are lock-free).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[Resource, ...]] = {}
        self._by_path: Mapping[tuple[str, str, str], Resource] = MappingProxyType({})
        self._by_kind: Mapping[tuple[str, str, str], Resource] = MappingProxyType({})
        self._custom: tuple[Resource, ...] = ()
        self._served: tuple[Resource, ...] = RESOURCES

    def install(self, name: str, resources: Iterable[Resource]) -> None:
        """Serve `resources` (every served version of one definition) in place of what `name` served."""
        with self._lock:
            self._entries[name] = tuple(resources)
            self._rebuild()

    def remove(self, name: str | None = None) -> None:
        """Stop serving one definition's resources, or (no name) every one installed."""
        with self._lock:
            for key in [k for k in self._entries if name is None or k == name]:
                del self._entries[key]
            self._rebuild()

    def _rebuild(self) -> None:
        everything = tuple(r for entries in self._entries.values() for r in entries)
        self._by_path = MappingProxyType({(r.group, r.version, r.plural): r for r in everything})
        self._by_kind = MappingProxyType({(r.group, r.version, r.kind): r for r in everything})
        self._custom = tuple(r for r in everything if (r.group, r.version, r.plural) not in _BY_PATH)
        self._served = RESOURCES + self._custom if self._custom else RESOURCES

    def by_path(self, group: str, version: str, plural: str) -> Resource | None:
        """The resource a URL names (`/apis/{group}/{version}/.../{plural}`); group "" is `/api/v1`."""
        key = (group, version, plural)
        return _BY_PATH.get(key) or self._by_path.get(key)

    def by_kind(self, api_version: str, kind: str) -> Resource | None:
        """The resource an object's `apiVersion`/`kind` belong to (None also for a malformed apiVersion)."""
        try:
            group, version = group_version(api_version)
        except ValueError:
            return None
        key = (group, version, kind)
        return _BY_KIND.get(key) or self._by_kind.get(key)

    def custom(self) -> tuple[Resource, ...]:
        """The custom resources served now (minus any a built-in shadows)."""
        return self._custom

    def served(self) -> tuple[Resource, ...]:
        """The static table, then the custom resources."""
        return self._served

    def group_versions(self) -> list[tuple[str, str]]:
        """Every served (group, version) in table order, the core group first, custom groups last; discovery
        lists them so (each definition's versions are installed in upstream's priority order)."""
        return list(dict.fromkeys((r.group, r.version) for r in self._served))

    def resources_in(self, group: str, version: str) -> list[Resource]:
        return [r for r in self._served if (r.group, r.version) == (group, version)]


def by_path(group: str, version: str, plural: str) -> Resource | None:
    """The built-in resource a URL names; a server's custom resources are its `ServedResources`'."""
    return _BY_PATH.get((group, version, plural))


def by_kind(api_version: str, kind: str) -> Resource | None:
    """The built-in resource of an `apiVersion`/`kind` (None also for a malformed apiVersion)."""
    try:
        group, version = group_version(api_version)
    except ValueError:
        return None
    return _BY_KIND.get((group, version, kind))


def storage_resource(resource: Resource) -> Resource:
    """The resource whose version a view's objects are stored in (the resource itself when it is not a view)."""
    if not resource.storage_version:
        return resource
    stored = by_path(resource.group, resource.storage_version, resource.plural)
    if stored is None:
        raise ValueError(f"{resource.plural} {resource.version}: no storage version {resource.storage_version}")
    return stored


def storage_prefix(resource: Resource) -> str:
    """`/registry/{plural}/` (`/registry/{group}/{plural}/` for a custom resource): every key of the
    resource starts with it, so a list or watch is one range."""
    if resource.custom:
        return f"/registry/{resource.group}/{resource.plural}/"
    return f"/registry/{resource.plural}/"


def storage_key(resource: Resource, namespace: str, name: str) -> str:
    """The key of one object; `namespace` is ignored for cluster-scoped resources and required otherwise.

    Refusing an empty namespace for a namespaced resource keeps `{prefix}{name}` from ever colliding with
    a namespace-wide prefix, which would make a list of one namespace return another's objects.
    """
    if not name:
        raise ValueError("an object key needs a name")
    if not resource.namespaced:
        return f"{storage_prefix(resource)}{name}"
    if not namespace:
        raise ValueError(f"{resource.plural} are namespaced: a key needs a namespace")
    return f"{storage_prefix(resource)}{namespace}/{name}"
