"""Server-side printing: lists, single objects and watch events as `meta.k8s.io/v1` Tables.

Upstream: k8s.io/apiserver/pkg/endpoints/handlers (response.go `asTable`, watch.go's `Fixup` that turns
headers off after the first event, rest.go's media-type negotiation for `as=Table`), pkg/printers
(tablegenerator.go `GenerateTable`) and the column definitions of pkg/printers/internalversion/printers.go.
The cells of each row come from control/apiserver/endpoints/printers.py.

kubectl asks for tables with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...,application/json`;
given a plain list instead it can only print NAME and AGE. The table keeps all columns (priority 1 ones
too) because the server always prints wide; kubectl drops priority-1 columns unless `-o wide`.

Rows carry the object as `includeObject` asks: `Metadata` (the default) a PartialObjectMetadata, which is
what kubectl needs to name rows and to follow up with `describe`; `Object` the whole object (kubectl asks
for it with `--sort-by` and `-L`-style lookups); `None` nothing (`object: null`, as upstream encodes an
empty RawExtension).

On a watch, upstream sends `columnDefinitions` only with the first event and `null` afterwards (the
table options' NoHeaders is switched on once the first object is transformed); `watch_event_table` takes
`first` to do the same. The encoded field is always present because upstream's JSON tag has no omitempty.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from control.api.typed import TypedObject
from control.apiserver.endpoints import printers
from control.apiserver.registry.strategies.base import PrinterColumn, Strategy
from control.apiserver.resources import Resource

TABLE_GROUP = "meta.k8s.io"
TABLE_VERSIONS = ("v1", "v1beta1")
INCLUDE_OBJECT_VALUES = ("None", "Metadata", "Object")

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Column:
    """A metav1.TableColumnDefinition; priority 1 columns are shown only by `-o wide`."""

    name: str
    type: str
    description: str
    priority: int = 0
    format: str = ""

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format, "description": self.description,
                "priority": self.priority}


@dataclass(frozen=True, slots=True)
class Printer:
    """Columns, the function filling a row's cells (given `now`) and, for pods, the row conditions."""

    columns: tuple[Column, ...]
    cells: Callable[[Obj, datetime], list[Any]]
    conditions: Callable[[Obj], list[dict[str, str]]] | None = None


NAME_DOC = ("Name must be unique within a namespace. Is required when creating resources, although some resources "
            "may allow a client to request the generation of an appropriate name automatically.")
AGE_DOC = ("CreationTimestamp is a timestamp representing the server time when this object was created. It is "
           "represented in RFC3339 form and is in UTC.")
NAME = Column("Name", "string", NAME_DOC, format="name")
AGE = Column("Age", "string", AGE_DOC)
CONTAINERS = Column("Containers", "string", "Names of each container in the template.", priority=1)
IMAGES = Column("Images", "string", "Images referenced by each container in the template.", priority=1)
SELECTOR = Column("Selector", "string", "A label query over pods that should match the replica count.", priority=1)



PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "pods"): Printer((
        NAME,
        Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
        Column("Status", "string", "The aggregate status of the containers in this pod."),
        Column("Restarts", "string", "The number of times the containers in this pod have been restarted and "
                                     "when the last container in this pod has restarted."),
        AGE,
        Column("IP", "string", "IP address allocated to the pod.", 1),
        Column("Node", "string", "NodeName is a request to schedule this pod onto a specific node.", 1),
        Column("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts other pods on "
                                           "the node.", 1),
        Column("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for pod "
                                            "readiness.", 1),
    ), printers.pod_cells, printers.pod_row_conditions),
    ("", "services"): Printer((
        NAME,
        Column("Type", "string", "type determines how the Service is exposed."),
        Column("Cluster-IP", "string", "clusterIP is the IP address of the service."),
        Column("External-IP", "string", "externalIPs is a list of IP addresses for which nodes in the cluster "
                                        "will also accept traffic for this service."),
        Column("Port(s)", "string", "The list of ports that are exposed by this service."),
        AGE,
        Column("Selector", "string", "Route service traffic to pods with label keys and values matching this "
                                     "selector.", 1),
    ), printers.service_cells),
    ("", "endpoints"): Printer((
        NAME, Column("Endpoints", "string", "The set of all endpoints is the union of all subsets."), AGE,
    ), printers.endpoints_cells),
    ("", "nodes"): Printer((
        NAME,
        Column("Status", "string", "The status of the node"),
        Column("Roles", "string", "The roles of the node"),
        AGE,
        Column("Version", "string", "Kubelet Version reported by the node."),
        Column("Internal-IP", "string", "List of addresses reachable to the node.", 1),
        Column("External-IP", "string", "List of addresses reachable to the node.", 1),
        Column("OS-Image", "string", "OS Image reported by the node from /etc/os-release.", 1),
        Column("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r'.", 1),
        Column("Container-Runtime", "string", "ContainerRuntime Version reported by the node through runtime "
                                              "remote API.", 1),
    ), printers.node_cells),
    ("", "namespaces"): Printer((
        NAME, Column("Status", "string", "The status of the namespace"), AGE,
    ), printers.namespace_cells),
    ("", "configmaps"): Printer((
        NAME, Column("Data", "string", "Data contains the configuration data."), AGE,
    ), printers.configmap_cells),
    ("", "secrets"): Printer((
        NAME,
        Column("Type", "string", "Used to facilitate programmatic handling of secret data."),
        Column("Data", "string", "Data contains the secret data."),
        AGE,
    ), printers.secret_cells),
    ("", "serviceaccounts"): Printer((
        NAME, Column("Secrets", "string", "Secrets is a list of the secrets in the same namespace that pods "
                                          "running using this ServiceAccount are allowed to use."), AGE,
    ), printers.serviceaccount_cells),
    ("", "events"): Printer((
        Column("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
        Column("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future."),
        Column("Reason", "string", "reason is why the action was taken."),
        Column("Object", "string", "The object this Event is about."),
        Column("Subobject", "string", "The field of the object this Event is about.", 1),
        Column("Source", "string", "The component reporting this event.", 1),
        Column("Message", "string", "A human-readable description of the status of this operation."),
        Column("First Seen", "string", "The time at which the event was first recorded.", 1),
        Column("Count", "string", "The number of times this event has occurred.", 1),
        Column("Name", "string", NAME_DOC, 1, "name"),
    ), printers.event_cells),
    ("", "resourcequotas"): Printer((
        NAME, AGE,
        Column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may "
                                    "consume."),
        Column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use "
                                  "independent of contention on the node."),
    ), printers.resource_quota_cells),
    ("", "replicationcontrollers"): Printer((
        NAME,
        Column("Desired", "integer", "Replicas is the number of desired replicas."),
        Column("Current", "integer", "Replicas is the most recently observed number of replicas."),
        Column("Ready", "integer", "The number of ready replicas for this replication controller."),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), printers.replication_controller_cells),
    ("apps", "deployments"): Printer((
        NAME,
        Column("Ready", "string", "Number of the pod with ready state"),
        Column("Up-to-date", "string", "Total number of non-terminated pods targeted by this deployment that have "
                                       "the desired template spec."),
        Column("Available", "string", "Total number of available pods (ready for at least minReadySeconds) "
                                      "targeted by this deployment."),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), printers.deployment_cells),
    ("apps", "replicasets"): Printer((
        NAME,
        Column("Desired", "integer", "Replicas is the number of desired replicas."),
        Column("Current", "integer", "Replicas is the most recently observed number of replicas."),
        Column("Ready", "integer", "The number of ready replicas for this replica set."),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), printers.replicaset_cells),
    ("apps", "daemonsets"): Printer((
        NAME,
        Column("Desired", "integer", "The total number of nodes that should be running the daemon pod."),
        Column("Current", "integer", "The number of nodes that are running at least 1 daemon pod and are "
                                     "supposed to run the daemon pod."),
        Column("Ready", "integer", "The number of nodes that should be running the daemon pod and have one or "
                                   "more of the daemon pod running and ready."),
        Column("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
        Column("Available", "integer", "The number of nodes that should be running the daemon pod and have one "
                                       "or more of the daemon pod running and available."),
        Column("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a "
                                          "node."),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), printers.daemonset_cells),
    ("apps", "statefulsets"): Printer((
        NAME, Column("Ready", "string", "Number of the pod with ready state"), AGE, CONTAINERS, IMAGES,
    ), printers.statefulset_cells),
    ("apps", "controllerrevisions"): Printer((
        NAME, Column("Controller", "string", "Controller of the object"),
        Column("Revision", "string", "Revision indicates the revision of the state represented by Data."), AGE,
    ), printers.controller_revision_cells),
    ("batch", "jobs"): Printer((
        NAME,
        Column("Status", "string", "Status of the job."),
        Column("Completions", "string", "The number of successfully completed pods and how many successful "
                                        "completions are desired."),
        Column("Duration", "string", "Time required to complete the job."),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), printers.job_cells),
    ("batch", "cronjobs"): Printer((
        NAME,
        Column("Schedule", "string", "The schedule in Cron format."),
        Column("Timezone", "string", "The time zone name for the given schedule."),
        Column("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions."),
        Column("Active", "integer", "A list of pointers to currently running jobs."),
        Column("Last Schedule", "string", "Information when was the last time the job was successfully "
                                          "scheduled."),
        AGE, CONTAINERS, IMAGES, SELECTOR,
    ), printers.cronjob_cells),
    ("autoscaling", "horizontalpodautoscalers"): Printer((
        NAME,
        Column("Reference", "string", "scaleTargetRef points to the target resource to scale, and is used to the pods "
                                      "for which metrics should be collected, as well as to actually change the "
                                      "replica count."),
        Column("Targets", "string", "metrics contains the specifications for which to use to calculate the desired "
                                    "replica count (the maximum replica count across all metrics will be used)."),
        Column("MinPods", "string", "minReplicas is the lower limit for the number of replicas to which the "
                                    "autoscaler can scale down."),
        Column("MaxPods", "integer", "maxReplicas is the upper limit for the number of replicas to which the "
                                     "autoscaler can scale up."),
        Column("Replicas", "integer", "currentReplicas is current number of replicas of pods managed by this "
                                      "autoscaler, as last seen by the autoscaler."),
        AGE,
    ), printers.hpa_cells),
    ("coordination.k8s.io", "leases"): Printer((
        NAME, Column("Holder", "string", "holderIdentity contains the identity of the holder of a current lease."),
        AGE,
    ), printers.lease_cells),
    ("scheduling.k8s.io", "priorityclasses"): Printer((
        NAME,
        Column("Value", "integer", "value represents the integer value of this priority class. This is the actual "
                                   "priority that pods receive when they have the name of this class in their pod "
                                   "spec."),
        Column("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be considered "
                                            "as the default priority for pods that do not have any priority class. "
                                            "Only one PriorityClass can be marked as `globalDefault`. However, if "
                                            "more than one PriorityClasses exists with their `globalDefault` field "
                                            "set to true, the smallest value of such global default PriorityClasses "
                                            "will be used as the default priority."),
        AGE,
        Column("PreemptionPolicy", "string", "preemptionPolicy is the Policy for preempting pods with lower "
                                             "priority. One of Never, PreemptLowerPriority. Defaults to "
                                             "PreemptLowerPriority if unset."),
    ), printers.priority_class_cells),
    ("discovery.k8s.io", "endpointslices"): Printer((
        NAME,
        Column("AddressType", "string", "addressType specifies the type of address carried by this EndpointSlice. "
                                        "All addresses in this slice must be the same type. This field is immutable "
                                        "after creation. The following address types are currently supported:\n* "
                                        "IPv4: Represents an IPv4 Address.\n* IPv6: Represents an IPv6 Address.\n* "
                                        "FQDN: Represents a Fully Qualified Domain Name."),
        Column("Ports", "string", "ports specifies the list of network ports exposed by each endpoint in this slice. "
                                  "Each port must have a unique name. When ports is empty, it indicates that there "
                                  "are no defined ports. When a port is defined with a nil port value, it indicates "
                                  "\"all ports\". Each slice may include a maximum of 100 ports."),
        Column("Endpoints", "string", "endpoints is a list of unique endpoints in this slice. Each slice may include "
                                      "a maximum of 1000 endpoints."),
        AGE,
    ), printers.endpoint_slice_cells),
    ("policy", "poddisruptionbudgets"): Printer((
        NAME,
        Column("Min Available", "string", "The minimum number of pods that must be available."),
        Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
        Column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
        AGE,
    ), printers.pod_disruption_budget_cells),
    ("", "persistentvolumes"): Printer((
        NAME,
        Column("Capacity", "string", "capacity is the description of the persistent volume's resources and capacity. "
                                     "More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"),
        Column("Access Modes", "string", "accessModes contains all ways the volume can be mounted. More info: "
                                         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"),
        Column("Reclaim Policy", "string", "persistentVolumeReclaimPolicy defines what happens to a persistent volume "
                                           "when released from its claim. Valid options are Retain (default for "
                                           "manually created PersistentVolumes), Delete (default for dynamically "
                                           "provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be "
                                           "supported by the volume plugin underlying this PersistentVolume. More "
                                           "info: https://kubernetes.io/docs/concepts/storage/persistent-volumes"
                                           "#reclaiming"),
        Column("Status", "string", "phase indicates if a volume is available, bound to a claim, or released by a "
                                   "claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes"
                                   "#phase"),
        Column("Claim", "string", "claimRef is part of a bi-directional binding between PersistentVolume and "
                                  "PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the "
                                  "authoritative bind between PV and PVC. More info: "
                                  "https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"),
        Column("StorageClass", "string", "StorageClass of the pv"),
        Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
        Column("Reason", "string", "reason is a brief CamelCase string that describes any failure and is meant for "
                                   "machine parsing and tidy display in the CLI."),
        AGE,
        Column("VolumeMode", "string", "volumeMode defines if a volume is intended to be used with a formatted "
                                       "filesystem or to remain in raw block state. Value of Filesystem is implied "
                                       "when not included in spec.", priority=1),
    ), printers.persistent_volume_cells),
    ("", "persistentvolumeclaims"): Printer((
        NAME,
        Column("Status", "string", "phase represents the current phase of PersistentVolumeClaim."),
        Column("Volume", "string", "volumeName is the binding reference to the PersistentVolume backing this claim."),
        Column("Capacity", "string", "capacity represents the actual resources of the underlying volume."),
        Column("Access Modes", "string", "accessModes contains the actual access modes the volume backing the PVC "
                                         "has. More info: https://kubernetes.io/docs/concepts/storage/"
                                         "persistent-volumes#access-modes-1"),
        Column("StorageClass", "string", "StorageClass of the pvc"),
        Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
        AGE,
        Column("VolumeMode", "string", "volumeMode defines what type of volume is required by the claim. Value of "
                                       "Filesystem is implied when not included in claim spec.", priority=1),
    ), printers.persistent_volume_claim_cells),
    ("storage.k8s.io", "storageclasses"): Printer((
        NAME,
        Column("Provisioner", "string", "provisioner indicates the type of the provisioner."),
        Column("ReclaimPolicy", "string", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned "
                                          "PersistentVolumes of this storage class. Defaults to Delete."),
        Column("VolumeBindingMode", "string", "volumeBindingMode indicates how PersistentVolumeClaims should be "
                                              "provisioned and bound.  When unset, VolumeBindingImmediate is used. "
                                              "This field is only honored by servers that enable the "
                                              "VolumeScheduling feature."),
        Column("AllowVolumeExpansion", "string", "allowVolumeExpansion shows whether the storage class allow volume "
                                                 "expand."),
        AGE,
    ), printers.storage_class_cells),
    ("networking.k8s.io", "ingresses"): Printer((
        NAME,
        Column("Class", "string", "The name of the IngressClass resource that should be used for additional "
                                  "configuration"),
        Column("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
        Column("Address", "string", "Address is a list containing ingress points for the load-balancer"),
        Column("Ports", "string", "Ports of TLS configurations that open"),
        AGE,
    ), printers.ingress_cells),
    ("networking.k8s.io", "ingressclasses"): Printer((
        NAME,
        Column("Controller", "string", "Controller that is responsible for handling this class"),
        Column("Parameters", "string", "A reference to a resource with additional parameters"),
        AGE,
    ), printers.ingress_class_cells),
    ("networking.k8s.io", "networkpolicies"): Printer((
        NAME,
        Column("Pod-Selector", "string", "podSelector selects the pods to which this NetworkPolicy object applies."),
        AGE,
    ), printers.network_policy_cells),
    ("certificates.k8s.io", "certificatesigningrequests"): Printer((
        NAME,
        AGE,
        Column("SignerName", "string", "signerName indicates the requested signer, and is a qualified name."),
        Column("Requestor", "string", "request contains an x509 certificate signing request encoded in a "
                                      "\"CERTIFICATE REQUEST\" PEM block."),
        Column("RequestedDuration", "string", "expirationSeconds is the requested duration of validity of the "
                                              "issued certificate."),
        Column("Condition", "string", "conditions applied to the request. Known conditions are \"Approved\", "
                                      "\"Denied\", and \"Failed\"."),
    ), printers.certificate_signing_request_cells),
    **{("rbac.authorization.k8s.io", plural): Printer((NAME, Column("Created At", "date", AGE_DOC)),
                                                      printers.role_cells) for plural in ("roles", "clusterroles")},
    **{("rbac.authorization.k8s.io", plural): Printer((
        NAME,
        Column("Role", "string", "RoleRef can reference a Role in the current namespace or a ClusterRole in the "
                                 "global namespace. If the RoleRef cannot be resolved, the Authorizer must return an "
                                 "error. This field is immutable."),
        AGE,
        Column("Users", "string", f"Users in the {kind}", 1),
        Column("Groups", "string", f"Groups in the {kind}", 1),
        Column("ServiceAccounts", "string", f"ServiceAccounts in the {kind}", 1),
    ), printers.binding_cells) for plural, kind in (("rolebindings", "roleBinding"),
                                                   ("clusterrolebindings", "clusterRoleBinding"))},
    ("node.k8s.io", "runtimeclasses"): Printer((
        NAME,
        Column("Handler", "string", "handler specifies the underlying runtime and configuration that the CRI "
                                    "implementation will use to handle pods of this class."),
        AGE,
    ), printers.runtime_class_cells),
    ("storage.k8s.io", "csidrivers"): Printer((
        NAME,
        Column("AttachRequired", "boolean", "attachRequired indicates this CSI volume driver requires an attach "
                                            "operation."),
        Column("PodInfoOnMount", "boolean", "podInfoOnMount indicates this CSI volume driver requires additional pod "
                                            "information (like podName, podUID, etc.) during mount operations."),
        Column("StorageCapacity", "boolean", "storageCapacity indicates that the CSI volume driver wants pod "
                                             "scheduling to consider the storage capacity that the driver deployment "
                                             "will report."),
        Column("TokenRequests", "string", "tokenRequests indicates the CSI driver needs pods' service account tokens "
                                          "it is mounting volume for to do necessary authentication."),
        Column("RequiresRepublish", "boolean", "requiresRepublish indicates the CSI driver wants `NodePublishVolume` "
                                               "being periodically called to reflect any possible change in the "
                                               "mounted volume."),
        Column("Modes", "string", "volumeLifecycleModes defines what kind of volumes this CSI volume driver "
                                  "supports."),
        AGE,
    ), printers.csi_driver_cells),
    ("storage.k8s.io", "csinodes"): Printer((
        NAME,
        Column("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
        AGE,
    ), printers.csi_node_cells),
    ("storage.k8s.io", "volumeattachments"): Printer((
        NAME,
        Column("Attacher", "string", "attacher indicates the name of the volume driver that MUST handle this "
                                     "request.", format="name"),
        Column("PV", "string", "persistentVolumeName represents the name of the persistent volume to attach."),
        Column("Node", "string", "nodeName represents the node that the volume should be attached to."),
        Column("Attached", "boolean", "attached indicates the volume is successfully attached."),
        AGE,
    ), printers.volume_attachment_cells),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): Printer((
        NAME,
        Column("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
        AGE,
    ), printers.webhook_configuration_cells),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): Printer((
        NAME,
        Column("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
        AGE,
    ), printers.webhook_configuration_cells),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): Printer((
        NAME,
        Column("Validations", "integer", "Validations indicates the number of validation rules defined in this "
                                         "configuration"),
        Column("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
        AGE,
    ), printers.admission_policy_cells),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): Printer((
        NAME,
        Column("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding "
                                       "binded to"),
        Column("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
        AGE,
    ), printers.admission_policy_binding_cells),
    ("apiregistration.k8s.io", "apiservices"): Printer((
        NAME,
        Column("Service", "string", "The reference to the service that hosts this API endpoint."),
        Column("Available", "string", "Whether this service is available."),
        AGE,
    ), printers.api_service_cells),
    ("", "componentstatuses"): Printer((
        NAME,
        Column("Status", "string", "Status of the component conditions"),
        Column("Message", "string", "Message of the component conditions"),
        Column("Error", "string", "Error of the component conditions"),
    ), printers.component_status_cells),
}


# rest.DefaultTableConvertor, for resources without a printer: the name and the raw creation timestamp.
DEFAULT_PRINTER = Printer((NAME, Column("Created At", "date", AGE_DOC)), printers.default_cells)


def printer_for(resource: Resource, strategy: Strategy | None = None) -> Printer:
    """The printer of a resource: from the columns its strategy defines (a custom resource's printer
    columns), else the built-in one."""
    columns = strategy.printer_columns() if strategy is not None else None
    if columns is not None:
        return custom_printer(columns)
    return PRINTERS.get((resource.group, resource.plural), DEFAULT_PRINTER)


def _custom_cell(column: PrinterColumn, obj: Obj, now: datetime) -> Any:
    """Upstream's CRD table convertor: the first value the column's path finds (None when it finds none,
    which kubectl prints as `<none>`); a `date` column shows the age of the timestamp it finds."""
    found = column.find(obj)
    if not found or found[0] is None:
        return None
    value = found[0]
    if column.type == "date":
        return printers.since(value, now) if isinstance(value, str) else None
    if column.type == "integer":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if column.type == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if column.type == "boolean":
        return value if isinstance(value, bool) else None
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def custom_printer(columns: tuple[PrinterColumn, ...]) -> Printer:
    """NAME, then the columns a strategy defines."""
    definitions_ = (NAME, *(Column(c.name, c.type, c.description, c.priority, c.format) for c in columns))

    def cells(obj: Obj, now: datetime) -> list[Any]:
        return [TypedObject(obj).metadata.name, *(_custom_cell(c, obj, now) for c in columns)]

    return Printer(definitions_, cells)


@dataclass(frozen=True, slots=True)
class TableRequest:
    """A client asked for a Table of this meta.k8s.io version (v1, or v1beta1 for clients before 1.15)."""

    version: str

    @property
    def api_version(self) -> str:
        return f"{TABLE_GROUP}/{self.version}"


def _media_ranges(accept_header: str) -> list[tuple[str, dict[str, str]]]:
    """(media type, parameters) per range, most preferred first: by `q`, then in the order written."""
    ranges = []
    for position, media_range in enumerate(accept_header.split(",")):
        media_type, *raw_params = (part.strip() for part in media_range.split(";"))
        params = {}
        for raw in raw_params:
            key, _, value = raw.partition("=")
            params[key.strip()] = value.strip().strip('"')
        try:
            quality = float(params.pop("q", "1"))
        except ValueError:
            quality = 0.0  # unreadable preference: treat as not acceptable
        if media_type and quality > 0:
            ranges.append((-quality, position, media_type.lower(), params))
    return [(media_type, params) for _, _, media_type, params in sorted(ranges)]


def parse_accept_table(accept_header: str | None) -> TableRequest | None:
    """The Table the client prefers, or None when it prefers the plain object (or sent no Accept).

    Ranges are tried in the client's order of preference and the first one this server can produce
    decides, as upstream's negotiation does: a servable Table range gives a TableRequest, a plain
    JSON (or wildcard) range gives None. Table ranges of an unknown version or group, and other `as=`
    kinds such as PartialObjectMetadataList, are skipped, so the plain fallback kubectl appends wins.
    """
    for media_type, params in _media_ranges(accept_header or ""):
        if media_type not in ("application/json", "application/*", "*/*"):
            continue
        target = params.get("as")
        if target is None:
            return None
        if (target == "Table" and params.get("g") == TABLE_GROUP and params.get("v") in TABLE_VERSIONS
                and media_type == "application/json"):
            return TableRequest(params["v"])
    return None


def parse_include_object(value: str | None) -> str:
    """The `includeObject` query parameter; absent or empty means Metadata. ValueError (a 400) otherwise."""
    if not value:
        return "Metadata"
    if value not in INCLUDE_OBJECT_VALUES:
        raise ValueError(f'unrecognized includeObject value: "{value}"')
    return value


def _row(printer: Printer, obj: Obj, *, now: datetime, include_object: str, api_version: str) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": printer.cells(obj, now)}
    conditions = printer.conditions(obj) if printer.conditions is not None else []
    if conditions:
        row["conditions"] = conditions
    if include_object == "Object":
        row["object"] = obj
    elif include_object == "None":
        row["object"] = None
    else:
        row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": api_version,
                         "metadata": dict(obj.get("metadata") or {})}
    return row


def table_for(resource: Resource, objects: Iterable[Obj], *, now: datetime, list_resource_version: str,
              include_object: str = "Metadata", table_version: str = "v1", continue_token: str = "",
              no_headers: bool = False, printer: Printer | None = None) -> dict[str, Any]:
    """The Table answering a list (or, with one object and its resourceVersion, a get).

    `include_object` must already be checked by `parse_include_object`; `no_headers` mirrors
    TableOptions.noHeaders and leaves `columnDefinitions` null.
    """
    if include_object not in INCLUDE_OBJECT_VALUES:
        raise ValueError(f'unrecognized includeObject value: "{include_object}"')
    printer = printer or printer_for(resource)
    api_version = f"{TABLE_GROUP}/{table_version}"
    metadata = {"resourceVersion": list_resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": metadata,
        "columnDefinitions": None if no_headers else [column.definition() for column in printer.columns],
        "rows": [_row(printer, obj, now=now, include_object=include_object, api_version=api_version)
                 for obj in objects],
    }


def watch_event_table(resource: Resource, obj: Obj, *, now: datetime, first: bool,
                      include_object: str = "Metadata", table_version: str = "v1",
                      printer: Printer | None = None) -> dict[str, Any]:
    """The one-row Table a watch event carries as its `object`; column definitions only when `first`.

    The table's resourceVersion is the object's, as upstream reads it from the object it converts.
    """
    resource_version = TypedObject(obj).metadata.resource_version
    return table_for(resource, [obj], now=now, list_resource_version=resource_version,
                     include_object=include_object, table_version=table_version, no_headers=not first,
                     printer=printer)
