"""The default roles and bindings every cluster starts with (upstream: plugin/pkg/auth/authorizer/rbac/
bootstrappolicy/policy.go ClusterRoles/ClusterRoleBindings and controller_policy.go ControllerRoles/
ControllerRoleBindings), as wire objects, each labelled `kubernetes.io/bootstrapping: rbac-defaults` and
annotated `rbac.authorization.kubernetes.io/autoupdate: "true"` so the reconcile at start (reconcile.py)
keeps it current.

Departures: `slimkube:local-path-provisioner`, bound to `system:nodes`, is slimkube's own (the built-in
local-path provisioner runs in every kubelet, where k3s runs it as a Deployment with its own service
account). Only the roles of the components slimkube runs or that operators look for are here (no
system:heapster, volume plugin roles, legacy token cleaner, cloud route
controller …); rules of the kept roles follow upstream 1.30, the extensions/v1beta1 duplicates dropped.
"""

from __future__ import annotations

from typing import Any

RBAC = "rbac.authorization.k8s.io"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAPPING = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"

READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete", "deletecollection")
READ_WRITE = READ + WRITE

CORE, APPS, BATCH, AUTOSCALING, POLICY = "", "apps", "batch", "autoscaling", "policy"
NETWORKING, DISCOVERY, COORDINATION = "networking.k8s.io", "discovery.k8s.io", "coordination.k8s.io"
STORAGE, CERTIFICATES, EVENTS = "storage.k8s.io", "certificates.k8s.io", "events.k8s.io"
AUTHENTICATION, AUTHORIZATION = "authentication.k8s.io", "authorization.k8s.io"


def rule(verbs: tuple[str, ...] | str, groups: tuple[str, ...] | str, *resources: str,
         names: tuple[str, ...] = ()) -> dict[str, Any]:
    verbs = (verbs,) if isinstance(verbs, str) else verbs
    groups = (groups,) if isinstance(groups, str) else groups
    out: dict[str, Any] = {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}
    if names:
        out["resourceNames"] = list(names)
    return out


def urls(verbs: tuple[str, ...] | str, *paths: str) -> dict[str, Any]:
    return {"verbs": [verbs] if isinstance(verbs, str) else list(verbs), "nonResourceURLs": list(paths)}


BOOTSTRAPPERS = "system:bootstrappers"  # the join token's group
NODE_CLIENT_APPROVAL = "system:certificates.k8s.io:certificatesigningrequests:nodeclient"
SELF_NODE_CLIENT_APPROVAL = "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"
EVENTS_RULE = rule(("create", "update", "patch"), (CORE, EVENTS), "events")
DELEGATION = [rule("create", AUTHENTICATION, "tokenreviews"), rule("create", AUTHORIZATION, "subjectaccessreviews")]


def node_rules() -> list[dict[str, Any]]:
    """policy.go NodeRules: what a kubelet needs. The Node authorizer narrows the object-scoped ones (secrets,
    configmaps, claims, volumes, leases, service account tokens) to its graph and NodeRestriction admission
    the writes; the rest it allows as they are. The `system:node` ClusterRole carries them, bound to no one."""
    return [
        rule("create", AUTHENTICATION, "tokenreviews"),
        rule("create", AUTHORIZATION, "subjectaccessreviews", "localsubjectaccessreviews"),
        rule(READ, CORE, "services"),
        rule(("create", "get", "list", "watch"), CORE, "nodes"),
        rule(("update", "patch"), CORE, "nodes/status"), rule(("update", "patch"), CORE, "nodes"),
        rule(("create", "update", "patch"), (CORE, EVENTS), "events"),
        rule(READ, CORE, "pods"), rule(("create", "delete"), CORE, "pods"),
        rule(("update", "patch"), CORE, "pods/status"), rule("create", CORE, "pods/eviction"),
        rule(READ, CORE, "secrets", "configmaps"), rule("get", CORE, "persistentvolumeclaims", "persistentvolumes"),
        rule("get", CORE, "endpoints"),
        rule(("create", "get", "list", "watch"), CERTIFICATES, "certificatesigningrequests"),
        rule(("get", "create", "update", "patch", "delete"), COORDINATION, "leases"),
        rule("get", STORAGE, "volumeattachments"),
        rule("create", CORE, "serviceaccounts/token"),
        rule(("get", "update", "patch"), CORE, "persistentvolumeclaims/status"),
        rule(("get", "create", "update", "patch", "delete"), STORAGE, "csinodes"),
        rule(READ, STORAGE, "csidrivers"),
        rule(READ, "node.k8s.io", "runtimeclasses"),
    ]


KUBELET_API_SUBRESOURCES = ("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log", "nodes/spec",
                            "nodes/pods", "nodes/healthz", "nodes/configz", "nodes/checkpoint")
KUBELET_API_ADMIN = "system:kubelet-api-admin"
LOCAL_PATH_PROVISIONER = "slimkube:local-path-provisioner"  # slimkube's own: its provisioner runs in the kubelet
APISERVER_KUBELET_CLIENT = "kube-apiserver-kubelet-client"  # the CN of the API server's client certificate


def cluster_role(name: str, rules: list[dict[str, Any]], *, labels: dict[str, str] | None = None,
                 aggregate_from: str = "") -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {**BOOTSTRAPPING, **(labels or {})},
                     "annotations": {AUTOUPDATE: "true"}},
        "rules": rules}
    if aggregate_from:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO + aggregate_from: "true"}}]}
    return role


def cluster_role_binding(name: str, subjects: list[dict[str, str]], role: str = "") -> dict[str, Any]:
    return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": dict(BOOTSTRAPPING), "annotations": {AUTOUPDATE: "true"}},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role or name}, "subjects": subjects}


def group(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC, "kind": "Group", "name": name}


def user(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC, "kind": "User", "name": name}


def service_account(namespace: str, name: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def _aggregate(to: str) -> dict[str, str]:
    return {AGGREGATE_TO + to: "true"}


def cluster_roles() -> list[dict[str, Any]]:
    """policy.go ClusterRoles."""
    return [
        cluster_role("cluster-admin", [rule("*", "*", "*"), urls("*", "*")]),
        cluster_role("system:discovery", [urls("get", "/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*",
                                               "/version", "/version/")]),
        cluster_role("system:monitoring", [urls("get", "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz",
                                                "/livez/*", "/readyz/*", "/healthz/*")]),
        cluster_role("system:basic-user", [
            rule("create", AUTHORIZATION, "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
            rule("create", AUTHENTICATION, "selfsubjectreviews")]),
        cluster_role("system:public-info-viewer", [urls("get", "/livez", "/readyz", "/healthz", "/version",
                                                        "/version/")]),
        cluster_role("admin", [], aggregate_from="admin"),
        cluster_role("edit", [], labels=_aggregate("admin"), aggregate_from="edit"),
        cluster_role("view", [], labels=_aggregate("edit"), aggregate_from="view"),
        cluster_role("system:aggregate-to-admin", [
            rule("create", AUTHORIZATION, "localsubjectaccessreviews"),
            rule(READ_WRITE, RBAC, "roles", "rolebindings")], labels=_aggregate("admin")),
        cluster_role("system:aggregate-to-edit", [
            rule("impersonate", CORE, "serviceaccounts"),
            rule(WRITE, CORE, "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
            rule("create", CORE, "pods/eviction"),
            rule(WRITE, CORE, "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services",
                 "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events"),
            rule("create", CORE, "serviceaccounts/token"),
            rule(WRITE, APPS, "statefulsets", "statefulsets/scale", "daemonsets", "deployments", "deployments/scale",
                 "deployments/rollback", "replicasets", "replicasets/scale"),
            rule(WRITE, AUTOSCALING, "horizontalpodautoscalers"),
            rule(WRITE, BATCH, "jobs", "cronjobs"),
            rule(WRITE, POLICY, "poddisruptionbudgets"),
            rule(WRITE, NETWORKING, "networkpolicies", "ingresses"),
            rule(READ_WRITE, COORDINATION, "leases"),
            rule(READ, CORE, "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets",
                 "services/proxy")], labels=_aggregate("edit")),
        cluster_role("system:aggregate-to-view", [
            rule(READ, CORE, "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
                 "services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status",
                 "configmaps"),
            rule(READ, CORE, "limitranges", "resourcequotas", "bindings", "events", "pods/status",
                 "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
            rule(READ, CORE, "namespaces"),
            rule(READ, DISCOVERY, "endpointslices"),
            rule(READ, APPS, "controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
                 "daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
                 "replicasets", "replicasets/status", "replicasets/scale"),
            rule(READ, AUTOSCALING, "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
            rule(READ, BATCH, "jobs", "cronjobs", "cronjobs/status", "jobs/status"),
            rule(READ, POLICY, "poddisruptionbudgets", "poddisruptionbudgets/status"),
            rule(READ, NETWORKING, "networkpolicies", "ingresses", "ingresses/status")], labels=_aggregate("view")),
        cluster_role("system:auth-delegator", DELEGATION),
        cluster_role("system:node-bootstrapper", [rule(("create", "get", "list", "watch"), CERTIFICATES,
                                                       "certificatesigningrequests")]),
        cluster_role(NODE_CLIENT_APPROVAL, [rule("create", CERTIFICATES, "certificatesigningrequests/nodeclient")]),
        cluster_role(SELF_NODE_CLIENT_APPROVAL, [
            rule("create", CERTIFICATES, "certificatesigningrequests/selfnodeclient")]),
        cluster_role("system:node-proxier", [
            rule(("list", "watch"), CORE, "services", "endpoints"), rule("get", CORE, "nodes"), EVENTS_RULE,
            rule(("list", "watch"), DISCOVERY, "endpointslices")]),
        cluster_role("system:kube-dns", [rule(("list", "watch"), CORE, "endpoints", "services"),
                                         rule(("list", "watch"), DISCOVERY, "endpointslices")]),
        cluster_role("system:kube-scheduler", [
            EVENTS_RULE, rule("create", COORDINATION, "leases"),
            rule(("get", "update"), COORDINATION, "leases", names=("kube-scheduler",)),
            rule(READ, CORE, "nodes"), rule(("get", "list", "watch", "delete"), CORE, "pods"),
            rule("create", CORE, "pods/binding", "bindings"), rule(("patch", "update"), CORE, "pods/status"),
            rule(READ, CORE, "replicationcontrollers", "services"), rule(READ, APPS, "replicasets", "statefulsets"),
            rule(READ, POLICY, "poddisruptionbudgets"), rule(READ, CORE, "persistentvolumeclaims", "persistentvolumes"),
            *DELEGATION, rule(READ, STORAGE, "csinodes", "csidrivers", "csistoragecapacities"),
            rule(READ, CORE, "namespaces")]),
        cluster_role("system:volume-scheduler", [
            rule(READ + ("patch", "update"), CORE, "persistentvolumes"), rule(READ, STORAGE, "storageclasses"),
            rule(READ + ("patch", "update"), CORE, "persistentvolumeclaims")]),
        cluster_role("system:kube-controller-manager", [
            EVENTS_RULE, rule("create", COORDINATION, "leases"),
            rule(("get", "update"), COORDINATION, "leases", names=("kube-controller-manager",)),
            rule("create", CORE, "secrets", "serviceaccounts"), rule("delete", CORE, "secrets"),
            rule("get", CORE, "configmaps", "namespaces", "secrets", "serviceaccounts"),
            rule("update", CORE, "secrets", "serviceaccounts"), *DELEGATION, rule(("list", "watch"), "*", "*"),
            rule("create", CORE, "serviceaccounts/token")]),
        cluster_role("system:service-account-issuer-discovery", [
            urls("get", "/.well-known/openid-configuration", "/.well-known/openid-configuration/",
                 "/openid/v1/jwks", "/openid/v1/jwks/")]),
        cluster_role("system:node", node_rules()),
        cluster_role(LOCAL_PATH_PROVISIONER, [
            rule(READ, CORE, "persistentvolumeclaims"), rule(READ + ("create", "delete"), CORE, "persistentvolumes"),
            rule(READ, STORAGE, "storageclasses")]),
        cluster_role(KUBELET_API_ADMIN, [
            rule(READ, CORE, "nodes"), rule("proxy", CORE, "nodes"), rule("*", CORE, *KUBELET_API_SUBRESOURCES)]),
    ]


def cluster_role_bindings() -> list[dict[str, Any]]:
    """policy.go ClusterRoleBindings."""
    authenticated = group("system:authenticated")
    return [
        cluster_role_binding("cluster-admin", [group("system:masters")]),
        cluster_role_binding("system:monitoring", [group("system:monitoring")]),
        cluster_role_binding("system:discovery", [authenticated]),
        cluster_role_binding("system:basic-user", [authenticated]),
        cluster_role_binding("system:public-info-viewer", [authenticated, group("system:unauthenticated")]),
        cluster_role_binding("system:node-proxier", [user("system:kube-proxy")]),
        # what the join token buys (kubeadm's kubelet-bootstrap and node-autoapprove bindings): its own CSR,
        # auto-approved as a node client certificate; nodes renew their own (docs/identity.md)
        cluster_role_binding("system:node-bootstrapper", [group(BOOTSTRAPPERS)]),
        cluster_role_binding(NODE_CLIENT_APPROVAL, [group(BOOTSTRAPPERS)]),
        cluster_role_binding(SELF_NODE_CLIENT_APPROVAL, [group("system:nodes")]),
        cluster_role_binding("system:kube-controller-manager", [user("system:kube-controller-manager")]),
        cluster_role_binding("system:kube-dns", [service_account("kube-system", "kube-dns")]),
        cluster_role_binding("system:kube-scheduler", [user("system:kube-scheduler")]),
        cluster_role_binding("system:volume-scheduler", [user("system:kube-scheduler")]),
        cluster_role_binding("system:service-account-issuer-discovery", [group("system:serviceaccounts")]),
        cluster_role_binding("system:node", []),
        # every node runs its share of the built-in local-path provisioner (nodeagent/volumes/local_path.py)
        cluster_role_binding(LOCAL_PATH_PROVISIONER, [group("system:nodes")]),
        # the API server's own calls to kubelets (logs, exec, port-forward, metrics); kubeadm and k3s bind it
        cluster_role_binding("system:kube-apiserver-kubelet-api-admin", [user(APISERVER_KUBELET_CLIENT)],
                             KUBELET_API_ADMIN),
    ]


def _controller_rules() -> dict[str, list[dict[str, Any]]]:
    """controller_policy.go: each controller's rules, by its service account's name."""
    finalizers = "update"
    return {
        "clusterrole-aggregation-controller": [
            rule(("escalate", "get", "list", "watch", "update", "patch"), RBAC, "clusterroles")],
        "cronjob-controller": [
            rule(("get", "list", "watch", "update"), BATCH, "cronjobs"),
            rule(("get", "list", "watch", "create", "update", "delete", "patch"), BATCH, "jobs"),
            rule("update", BATCH, "cronjobs/status"), rule(finalizers, BATCH, "cronjobs/finalizers"),
            rule(("list", "delete"), CORE, "pods"), EVENTS_RULE],
        "daemon-set-controller": [
            rule(READ, APPS, "daemonsets"), rule("update", APPS, "daemonsets/status"),
            rule(finalizers, APPS, "daemonsets/finalizers"), rule(("list", "watch"), CORE, "nodes"),
            rule(("list", "watch", "create", "delete", "patch"), CORE, "pods"), rule("create", CORE, "pods/binding"),
            rule(("get", "list", "watch", "create", "delete", "update", "patch"), APPS, "controllerrevisions"),
            EVENTS_RULE],
        "deployment-controller": [
            rule(("get", "list", "watch", "update"), APPS, "deployments"), rule("update", APPS, "deployments/status"),
            rule(finalizers, APPS, "deployments/finalizers"),
            rule(("get", "list", "watch", "create", "update", "patch", "delete"), APPS, "replicasets"),
            rule(("get", "list", "watch", "update"), CORE, "pods"), EVENTS_RULE],
        "disruption-controller": [
            rule(READ, APPS, "deployments", "replicasets", "statefulsets"),
            rule(READ, CORE, "replicationcontrollers"), rule(READ, POLICY, "poddisruptionbudgets"),
            rule("update", POLICY, "poddisruptionbudgets/status"), rule("get", "*", "*/scale"), EVENTS_RULE],
        "endpoint-controller": [
            rule(READ, CORE, "services", "pods"),
            rule(("get", "list", "create", "update", "delete"), CORE, "endpoints"),
            rule("create", CORE, "endpoints/restricted"), EVENTS_RULE],
        "endpointslice-controller": [
            rule(READ, CORE, "services", "pods", "nodes"), rule(finalizers, CORE, "services/finalizers"),
            rule(("get", "list", "create", "update", "delete"), DISCOVERY, "endpointslices"), EVENTS_RULE],
        "endpointslicemirroring-controller": [
            rule(READ, CORE, "services", "endpoints"), rule(finalizers, CORE, "services/finalizers"),
            rule(finalizers, CORE, "endpoints/finalizers"),
            rule(("get", "list", "create", "update", "delete"), DISCOVERY, "endpointslices"), EVENTS_RULE],
        "generic-garbage-collector": [rule(("get", "list", "watch", "patch", "update", "delete"), "*", "*")],
        "horizontal-pod-autoscaler": [
            rule(READ, AUTOSCALING, "horizontalpodautoscalers"),
            rule("update", AUTOSCALING, "horizontalpodautoscalers/status"),
            rule(("get", "update"), "*", "*/scale"), rule("list", CORE, "pods"),
            rule("list", "metrics.k8s.io", "pods"), EVENTS_RULE],
        "job-controller": [
            rule(("get", "list", "watch", "update", "patch"), BATCH, "jobs"), rule("update", BATCH, "jobs/status"),
            rule(finalizers, BATCH, "jobs/finalizers"),
            rule(("list", "watch", "create", "delete", "patch"), CORE, "pods"), EVENTS_RULE],
        "namespace-controller": [
            rule(("get", "list", "watch", "delete"), CORE, "namespaces"),
            rule("update", CORE, "namespaces/finalize", "namespaces/status"),
            rule(("get", "list", "delete", "deletecollection"), "*", "*")],
        "node-controller": [
            rule(("get", "list", "update", "delete", "patch"), CORE, "nodes"),
            rule(("patch", "update"), CORE, "nodes/status"), rule(("patch", "update"), CORE, "pods/status"),
            rule(("list", "delete"), CORE, "pods"), EVENTS_RULE],
        "persistent-volume-binder": [
            rule(("get", "list", "watch", "update", "create", "delete"), CORE, "persistentvolumes"),
            rule("update", CORE, "persistentvolumes/status"),
            rule(("get", "list", "watch", "update"), CORE, "persistentvolumeclaims"),
            rule("update", CORE, "persistentvolumeclaims/status"),
            rule(("list", "watch", "get", "create", "delete"), CORE, "pods"),
            rule(("get", "create", "delete"), CORE, "services", "endpoints"),
            rule("get", CORE, "secrets"), rule(("get", "list"), CORE, "nodes"),
            rule(READ, STORAGE, "storageclasses"), EVENTS_RULE],
        "pod-garbage-collector": [
            rule(("list", "watch", "delete"), CORE, "pods"), rule(("get", "list"), CORE, "nodes"),
            rule("patch", CORE, "pods/status")],
        "replicaset-controller": [
            rule(("get", "list", "watch", "update"), APPS, "replicasets"), rule("update", APPS, "replicasets/status"),
            rule(finalizers, APPS, "replicasets/finalizers"),
            rule(("list", "watch", "patch", "create", "delete"), CORE, "pods"), EVENTS_RULE],
        "replication-controller": [
            rule(("get", "list", "watch", "update"), CORE, "replicationcontrollers"),
            rule("update", CORE, "replicationcontrollers/status"),
            rule(finalizers, CORE, "replicationcontrollers/finalizers"),
            rule(("list", "watch", "patch", "create", "delete"), CORE, "pods"), EVENTS_RULE],
        "resourcequota-controller": [
            rule(("list", "watch"), "*", "*"), rule("update", CORE, "resourcequotas/status"), EVENTS_RULE],
        "service-account-controller": [rule("create", CORE, "serviceaccounts"), EVENTS_RULE],
        "service-controller": [
            rule(READ, CORE, "services"), rule(("patch", "update"), CORE, "services/status"),
            rule(("list", "watch"), CORE, "nodes"), EVENTS_RULE],
        "statefulset-controller": [
            rule(("list", "watch"), CORE, "pods"), rule(READ, APPS, "statefulsets"),
            rule("update", APPS, "statefulsets/status"), rule(finalizers, APPS, "statefulsets/finalizers"),
            rule(("get", "create", "delete", "update", "patch"), CORE, "pods"),
            rule(("get", "create", "delete", "update", "patch", "list", "watch"), APPS, "controllerrevisions"),
            rule(("get", "create"), CORE, "persistentvolumeclaims"),
            rule(("update", "delete"), CORE, "persistentvolumeclaims"),  # StatefulSetAutoDeletePVC, on since 1.27
            EVENTS_RULE],
        "taint-eviction-controller": [  # pod deletion when a NoExecute taint is not tolerated
            rule(("patch", "update"), CORE, "pods/status"), rule(("list", "get", "delete"), CORE, "pods"),
            EVENTS_RULE],
        "ttl-after-finished-controller": [rule(("get", "list", "watch", "delete"), BATCH, "jobs"), EVENTS_RULE],
        "root-ca-cert-publisher": [rule(("create", "update"), CORE, "configmaps"), EVENTS_RULE],
        "certificate-controller": [
            rule(("get", "list", "watch", "delete"), CERTIFICATES, "certificatesigningrequests"),
            rule("update", CERTIFICATES, "certificatesigningrequests/status", "certificatesigningrequests/approval"),
            rule(("approve", "sign"), CERTIFICATES, "signers", names=(
                "kubernetes.io/kube-apiserver-client", "kubernetes.io/kube-apiserver-client-kubelet",
                "kubernetes.io/kubelet-serving")),
            # slimkube's approvers: node passwords, the Node's addresses, the API server's own addresses
            rule(("get", "create"), CORE, "secrets"), rule(("list", "watch"), CORE, "nodes"),
            rule("get", CORE, "services", "endpoints"),
            *DELEGATION, EVENTS_RULE],
        "pvc-protection-controller": [
            rule(("get", "list", "watch", "update"), CORE, "persistentvolumeclaims"),
            rule(("list", "watch", "get"), CORE, "pods"), EVENTS_RULE],
        "pv-protection-controller": [rule(("get", "list", "watch", "update"), CORE, "persistentvolumes"),
                                     EVENTS_RULE],
    }


def controller_roles() -> list[dict[str, Any]]:
    return [cluster_role(f"system:controller:{name}", rules) for name, rules in _controller_rules().items()]


def controller_role_bindings() -> list[dict[str, Any]]:
    return [cluster_role_binding(f"system:controller:{name}", [service_account("kube-system", name)])
            for name in _controller_rules()]


def all_cluster_roles() -> list[dict[str, Any]]:
    return cluster_roles() + controller_roles()


def all_cluster_role_bindings() -> list[dict[str, Any]]:
    return cluster_role_bindings() + controller_role_bindings()
