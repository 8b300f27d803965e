"""Typed views of core/v1: Pod (spec, containers, status, container statuses), Node, Service, Endpoints,
Namespace, PersistentVolumeClaim, PersistentVolume, ConfigMap, Secret and the structs they nest.

Upstream: pkg/apis/core/types.go as served by k8s.io/api/core/v1/types.go. Each property reads one JSON
field under its Go name in snake case (`spec.nodeName` → `pod.spec.node_name`); absent fields read as
zero values (see `control.api.typed.base`). Departures: structs code passes on whole rather than reads
(affinity, volume sources, env sources, seccomp profiles) are plain mappings; quantities stay as written
on the wire (parse them with `control.apimachinery.quantity`); defaults the API server applies on write
(`restartPolicy: Always`, `protocol: TCP`, …) are not re-applied here: a view of an object that did not
go through the API server reads its zero values.
"""

from __future__ import annotations

from collections.abc import Sequence

from control.api.typed.base import (
    View,
    boolean,
    int_list,
    int_or_string,
    integer,
    mapping,
    nested,
    nested_list,
    optional_bool,
    optional_int,
    optional_mapping,
    optional_string,
    pointer,
    raw_list,
    string,
    string_list,
    string_map,
)
from control.api.typed.meta import Condition, LabelSelector, ObjectMeta, TypedObject


class ObjectReference(View):
    __slots__ = ()
    kind = string("kind")
    namespace = string("namespace")
    name = string("name")
    uid = string("uid")
    api_version = string("apiVersion")
    resource_version = string("resourceVersion")
    field_path = string("fieldPath")


class LocalObjectReference(View):
    __slots__ = ()
    name = string("name")


# --- containers -------------------------------------------------------------------------------------------

class ContainerPort(View):
    __slots__ = ()
    name = string("name")
    host_port = integer("hostPort")
    container_port = integer("containerPort")
    protocol = string("protocol")
    host_ip = string("hostIP")


class EnvVar(View):
    __slots__ = ()
    name = string("name")
    value = string("value")
    value_from = optional_mapping("valueFrom")


class VolumeMount(View):
    __slots__ = ()
    name = string("name")
    read_only = boolean("readOnly")
    mount_path = string("mountPath")
    sub_path = string("subPath")
    sub_path_expr = string("subPathExpr")
    mount_propagation = optional_string("mountPropagation")


class VolumeDevice(View):
    __slots__ = ()
    name = string("name")
    device_path = string("devicePath")


class ResourceRequirements(View):
    """Limits and requests as the wire's maps of resource name → quantity."""

    __slots__ = ()
    limits = mapping("limits")
    requests = mapping("requests")


class ExecAction(View):
    __slots__ = ()
    command = string_list("command")


class HTTPGetAction(View):
    __slots__ = ()
    path = string("path")
    port = int_or_string("port")
    host = string("host")
    scheme = string("scheme")
    http_headers = raw_list("httpHeaders")


class TCPSocketAction(View):
    __slots__ = ()
    port = int_or_string("port")
    host = string("host")


class GRPCAction(View):
    __slots__ = ()
    port = integer("port")
    service = optional_string("service")


class SleepAction(View):
    __slots__ = ()
    seconds = integer("seconds")


class LifecycleHandler(View):
    """One hook: exactly one of exec, httpGet, tcpSocket or sleep is set."""

    __slots__ = ()
    exec = pointer("exec", ExecAction)
    http_get = pointer("httpGet", HTTPGetAction)
    tcp_socket = pointer("tcpSocket", TCPSocketAction)
    sleep = pointer("sleep", SleepAction)


class Lifecycle(View):
    __slots__ = ()
    post_start = pointer("postStart", LifecycleHandler)
    pre_stop = pointer("preStop", LifecycleHandler)


class Probe(View):
    __slots__ = ()
    exec = pointer("exec", ExecAction)
    http_get = pointer("httpGet", HTTPGetAction)
    tcp_socket = pointer("tcpSocket", TCPSocketAction)
    grpc = pointer("grpc", GRPCAction)
    initial_delay_seconds = integer("initialDelaySeconds")
    timeout_seconds = integer("timeoutSeconds")
    period_seconds = integer("periodSeconds")
    success_threshold = integer("successThreshold")
    failure_threshold = integer("failureThreshold")
    termination_grace_period_seconds = optional_int("terminationGracePeriodSeconds")


class Capabilities(View):
    __slots__ = ()
    add = string_list("add")
    drop = string_list("drop")


class SecurityContext(View):
    __slots__ = ()
    capabilities = pointer("capabilities", Capabilities)
    privileged = optional_bool("privileged")
    se_linux_options = optional_mapping("seLinuxOptions")
    run_as_user = optional_int("runAsUser")
    run_as_group = optional_int("runAsGroup")
    run_as_non_root = optional_bool("runAsNonRoot")
    read_only_root_filesystem = optional_bool("readOnlyRootFilesystem")
    allow_privilege_escalation = optional_bool("allowPrivilegeEscalation")
    proc_mount = optional_string("procMount")
    seccomp_profile = optional_mapping("seccompProfile")
    app_armor_profile = optional_mapping("appArmorProfile")


class Container(View):
    __slots__ = ()
    name = string("name")
    image = string("image")
    command = string_list("command")
    args = string_list("args")
    working_dir = string("workingDir")
    ports = nested_list("ports", ContainerPort)
    env_from = raw_list("envFrom")
    env = nested_list("env", EnvVar)
    resources = nested("resources", ResourceRequirements)
    restart_policy = optional_string("restartPolicy")
    volume_mounts = nested_list("volumeMounts", VolumeMount)
    volume_devices = nested_list("volumeDevices", VolumeDevice)
    liveness_probe = pointer("livenessProbe", Probe)
    readiness_probe = pointer("readinessProbe", Probe)
    startup_probe = pointer("startupProbe", Probe)
    lifecycle = pointer("lifecycle", Lifecycle)
    termination_message_path = string("terminationMessagePath")
    termination_message_policy = string("terminationMessagePolicy")
    image_pull_policy = string("imagePullPolicy")
    security_context = pointer("securityContext", SecurityContext)
    stdin = boolean("stdin")
    stdin_once = boolean("stdinOnce")
    tty = boolean("tty")


# --- pods -------------------------------------------------------------------------------------------------

class Volume(View):
    """A pod volume: its name and its one source, read whole (`source` names which one is set)."""

    __slots__ = ()
    name = string("name")
    host_path = optional_mapping("hostPath")
    empty_dir = optional_mapping("emptyDir")
    secret = optional_mapping("secret")
    config_map = optional_mapping("configMap")
    persistent_volume_claim = optional_mapping("persistentVolumeClaim")
    projected = optional_mapping("projected")
    downward_api = optional_mapping("downwardAPI")
    ephemeral = optional_mapping("ephemeral")
    csi = optional_mapping("csi")
    nfs = optional_mapping("nfs")

    @property
    def source(self) -> str:
        """The JSON name of the source that is set (`emptyDir`, `configMap`, …), or "" for none."""
        return next((key for key, value in self.raw.items() if key != "name" and value is not None), "")


class Toleration(View):
    __slots__ = ()
    key = string("key")
    operator = string("operator")
    value = string("value")
    effect = string("effect")
    toleration_seconds = optional_int("tolerationSeconds")


class PodSecurityContext(View):
    __slots__ = ()
    se_linux_options = optional_mapping("seLinuxOptions")
    run_as_user = optional_int("runAsUser")
    run_as_group = optional_int("runAsGroup")
    run_as_non_root = optional_bool("runAsNonRoot")
    supplemental_groups = int_list("supplementalGroups")
    fs_group = optional_int("fsGroup")
    fs_group_change_policy = optional_string("fsGroupChangePolicy")
    sysctls = raw_list("sysctls")
    seccomp_profile = optional_mapping("seccompProfile")


class PodDNSConfig(View):
    __slots__ = ()
    nameservers = string_list("nameservers")
    searches = string_list("searches")
    options = raw_list("options")


class HostAlias(View):
    __slots__ = ()
    ip = string("ip")
    hostnames = string_list("hostnames")


class PodReadinessGate(View):
    __slots__ = ()
    condition_type = string("conditionType")


class PodSpec(View):
    __slots__ = ()
    volumes = nested_list("volumes", Volume)
    init_containers = nested_list("initContainers", Container)
    containers = nested_list("containers", Container)
    ephemeral_containers = nested_list("ephemeralContainers", Container)
    restart_policy = string("restartPolicy")
    termination_grace_period_seconds = optional_int("terminationGracePeriodSeconds")
    active_deadline_seconds = optional_int("activeDeadlineSeconds")
    dns_policy = string("dnsPolicy")
    node_selector = string_map("nodeSelector")
    service_account_name = string("serviceAccountName")
    automount_service_account_token = optional_bool("automountServiceAccountToken")
    node_name = string("nodeName")
    host_network = boolean("hostNetwork")
    host_pid = boolean("hostPID")
    host_ipc = boolean("hostIPC")
    share_process_namespace = optional_bool("shareProcessNamespace")
    security_context = nested("securityContext", PodSecurityContext)
    image_pull_secrets = nested_list("imagePullSecrets", LocalObjectReference)
    hostname = string("hostname")
    subdomain = string("subdomain")
    set_hostname_as_fqdn = optional_bool("setHostnameAsFQDN")
    affinity = optional_mapping("affinity")
    scheduler_name = string("schedulerName")
    tolerations = nested_list("tolerations", Toleration)
    host_aliases = nested_list("hostAliases", HostAlias)
    priority_class_name = string("priorityClassName")
    priority = optional_int("priority")
    preemption_policy = optional_string("preemptionPolicy")
    dns_config = pointer("dnsConfig", PodDNSConfig)
    readiness_gates = nested_list("readinessGates", PodReadinessGate)
    runtime_class_name = optional_string("runtimeClassName")
    enable_service_links = optional_bool("enableServiceLinks")
    overhead = mapping("overhead")
    topology_spread_constraints = raw_list("topologySpreadConstraints")
    os = optional_mapping("os")


class ContainerStateWaiting(View):
    __slots__ = ()
    reason = string("reason")
    message = string("message")


class ContainerStateRunning(View):
    __slots__ = ()
    started_at = string("startedAt")


class ContainerStateTerminated(View):
    __slots__ = ()
    exit_code = integer("exitCode")
    signal = integer("signal")
    reason = string("reason")
    message = string("message")
    started_at = string("startedAt")
    finished_at = string("finishedAt")
    container_id = string("containerID")


class ContainerState(View):
    """At most one of waiting, running, terminated is set; none set means waiting (upstream's reading)."""

    __slots__ = ()
    waiting = pointer("waiting", ContainerStateWaiting)
    running = pointer("running", ContainerStateRunning)
    terminated = pointer("terminated", ContainerStateTerminated)


class ContainerStatus(View):
    __slots__ = ()
    name = string("name")
    state = nested("state", ContainerState)
    last_state = nested("lastState", ContainerState)
    ready = boolean("ready")
    restart_count = integer("restartCount")
    image = string("image")
    image_id = string("imageID")
    container_id = string("containerID")
    started = optional_bool("started")
    allocated_resources = mapping("allocatedResources")
    resources = pointer("resources", ResourceRequirements)


class PodIP(View):
    __slots__ = ()
    ip = string("ip")


def find_condition(conditions: Sequence[Condition], condition_type: str) -> Condition | None:
    """The condition of that type, or None (upstream's GetPodCondition / GetNodeCondition)."""
    return next((condition for condition in conditions if condition.type == condition_type), None)


class PodStatus(View):
    __slots__ = ()
    phase = string("phase")
    conditions = nested_list("conditions", Condition)
    message = string("message")
    reason = string("reason")
    nominated_node_name = string("nominatedNodeName")
    host_ip = string("hostIP")
    host_ips = nested_list("hostIPs", PodIP)
    pod_ip = string("podIP")
    pod_ips = nested_list("podIPs", PodIP)
    start_time = optional_string("startTime")
    init_container_statuses = nested_list("initContainerStatuses", ContainerStatus)
    container_statuses = nested_list("containerStatuses", ContainerStatus)
    ephemeral_container_statuses = nested_list("ephemeralContainerStatuses", ContainerStatus)
    qos_class = string("qosClass")
    resize = string("resize")

    def condition(self, condition_type: str) -> Condition | None:
        return find_condition(self.conditions, condition_type)


class Pod(TypedObject):
    __slots__ = ()
    spec = nested("spec", PodSpec)
    status = nested("status", PodStatus)


class PodTemplateSpec(View):
    __slots__ = ()
    metadata = nested("metadata", ObjectMeta)
    spec = nested("spec", PodSpec)


class PodTemplate(TypedObject):
    __slots__ = ()
    template = nested("template", PodTemplateSpec)


class ReplicationControllerSpec(View):
    __slots__ = ()
    replicas = optional_int("replicas")
    min_ready_seconds = integer("minReadySeconds")
    selector = string_map("selector")
    template = pointer("template", PodTemplateSpec)


class ReplicationControllerStatus(View):
    __slots__ = ()
    replicas = integer("replicas")
    fully_labeled_replicas = integer("fullyLabeledReplicas")
    ready_replicas = integer("readyReplicas")
    available_replicas = integer("availableReplicas")
    observed_generation = integer("observedGeneration")
    conditions = nested_list("conditions", Condition)


class ReplicationController(TypedObject):
    __slots__ = ()
    spec = nested("spec", ReplicationControllerSpec)
    status = nested("status", ReplicationControllerStatus)


# --- nodes ------------------------------------------------------------------------------------------------

class Taint(View):
    __slots__ = ()
    key = string("key")
    value = string("value")
    effect = string("effect")
    time_added = optional_string("timeAdded")


class NodeSpec(View):
    __slots__ = ()
    pod_cidr = string("podCIDR")
    pod_cidrs = string_list("podCIDRs")
    provider_id = string("providerID")
    unschedulable = boolean("unschedulable")
    taints = nested_list("taints", Taint)


class NodeAddress(View):
    __slots__ = ()
    type = string("type")
    address = string("address")


class NodeSystemInfo(View):
    __slots__ = ()
    machine_id = string("machineID")
    system_uuid = string("systemUUID")
    boot_id = string("bootID")
    kernel_version = string("kernelVersion")
    os_image = string("osImage")
    container_runtime_version = string("containerRuntimeVersion")
    kubelet_version = string("kubeletVersion")
    kube_proxy_version = string("kubeProxyVersion")
    operating_system = string("operatingSystem")
    architecture = string("architecture")


class ContainerImage(View):
    __slots__ = ()
    names = string_list("names")
    size_bytes = integer("sizeBytes")


class NodeStatus(View):
    __slots__ = ()
    capacity = mapping("capacity")
    allocatable = mapping("allocatable")
    phase = string("phase")
    conditions = nested_list("conditions", Condition)
    addresses = nested_list("addresses", NodeAddress)
    daemon_endpoints = mapping("daemonEndpoints")
    node_info = nested("nodeInfo", NodeSystemInfo)
    images = nested_list("images", ContainerImage)
    volumes_in_use = string_list("volumesInUse")
    volumes_attached = raw_list("volumesAttached")

    def condition(self, condition_type: str) -> Condition | None:
        return find_condition(self.conditions, condition_type)

    def address(self, address_type: str) -> str:
        """The first address of that type (`InternalIP`, `Hostname`, …), or ""."""
        return next((entry.address for entry in self.addresses if entry.type == address_type), "")


class Node(TypedObject):
    __slots__ = ()
    spec = nested("spec", NodeSpec)
    status = nested("status", NodeStatus)


# --- services and endpoints -------------------------------------------------------------------------------

class ServicePort(View):
    __slots__ = ()
    name = string("name")
    protocol = string("protocol")
    app_protocol = optional_string("appProtocol")
    port = integer("port")
    target_port = int_or_string("targetPort")
    node_port = integer("nodePort")


class LoadBalancerIngress(View):
    __slots__ = ()
    ip = string("ip")
    hostname = string("hostname")
    ip_mode = optional_string("ipMode")


class LoadBalancerStatus(View):
    __slots__ = ()
    ingress = nested_list("ingress", LoadBalancerIngress)


class ServiceSpec(View):
    __slots__ = ()
    ports = nested_list("ports", ServicePort)
    selector = string_map("selector")
    cluster_ip = string("clusterIP")
    cluster_ips = string_list("clusterIPs")
    type = string("type")
    external_ips = string_list("externalIPs")
    session_affinity = string("sessionAffinity")
    load_balancer_ip = string("loadBalancerIP")
    load_balancer_source_ranges = string_list("loadBalancerSourceRanges")
    external_name = string("externalName")
    external_traffic_policy = string("externalTrafficPolicy")
    health_check_node_port = integer("healthCheckNodePort")
    publish_not_ready_addresses = boolean("publishNotReadyAddresses")
    session_affinity_config = optional_mapping("sessionAffinityConfig")
    ip_families = string_list("ipFamilies")
    ip_family_policy = optional_string("ipFamilyPolicy")
    allocate_load_balancer_node_ports = optional_bool("allocateLoadBalancerNodePorts")
    load_balancer_class = optional_string("loadBalancerClass")
    internal_traffic_policy = optional_string("internalTrafficPolicy")


class ServiceStatus(View):
    __slots__ = ()
    load_balancer = nested("loadBalancer", LoadBalancerStatus)
    conditions = nested_list("conditions", Condition)


class Service(TypedObject):
    __slots__ = ()
    spec = nested("spec", ServiceSpec)
    status = nested("status", ServiceStatus)


class EndpointAddress(View):
    __slots__ = ()
    ip = string("ip")
    hostname = string("hostname")
    node_name = optional_string("nodeName")
    target_ref = pointer("targetRef", ObjectReference)


class EndpointPort(View):
    __slots__ = ()
    name = string("name")
    port = integer("port")
    protocol = string("protocol")
    app_protocol = optional_string("appProtocol")


class EndpointSubset(View):
    __slots__ = ()
    addresses = nested_list("addresses", EndpointAddress)
    not_ready_addresses = nested_list("notReadyAddresses", EndpointAddress)
    ports = nested_list("ports", EndpointPort)


class Endpoints(TypedObject):
    __slots__ = ()
    subsets = nested_list("subsets", EndpointSubset)


# --- namespaces, config and storage -----------------------------------------------------------------------

class NamespaceSpec(View):
    __slots__ = ()
    finalizers = string_list("finalizers")


class NamespaceStatus(View):
    __slots__ = ()
    phase = string("phase")
    conditions = nested_list("conditions", Condition)


class Namespace(TypedObject):
    __slots__ = ()
    spec = nested("spec", NamespaceSpec)
    status = nested("status", NamespaceStatus)


class ConfigMap(TypedObject):
    __slots__ = ()
    data = string_map("data")
    binary_data = string_map("binaryData")
    immutable = optional_bool("immutable")


class Secret(TypedObject):
    """`data` values are base64 as on the wire."""

    __slots__ = ()
    data = string_map("data")
    string_data = string_map("stringData")
    type = string("type")
    immutable = optional_bool("immutable")


class PersistentVolumeClaimSpec(View):
    __slots__ = ()
    access_modes = string_list("accessModes")
    selector = pointer("selector", LabelSelector)
    resources = nested("resources", ResourceRequirements)
    volume_name = string("volumeName")
    storage_class_name = optional_string("storageClassName")
    volume_mode = optional_string("volumeMode")
    data_source = optional_mapping("dataSource")


class PersistentVolumeClaimStatus(View):
    __slots__ = ()
    phase = string("phase")
    access_modes = string_list("accessModes")
    capacity = mapping("capacity")
    conditions = nested_list("conditions", Condition)


class PersistentVolumeClaim(TypedObject):
    __slots__ = ()
    spec = nested("spec", PersistentVolumeClaimSpec)
    status = nested("status", PersistentVolumeClaimStatus)


class PersistentVolumeSpec(View):
    __slots__ = ()
    capacity = mapping("capacity")
    access_modes = string_list("accessModes")
    claim_ref = pointer("claimRef", ObjectReference)
    persistent_volume_reclaim_policy = string("persistentVolumeReclaimPolicy")
    storage_class_name = string("storageClassName")
    mount_options = string_list("mountOptions")
    volume_mode = optional_string("volumeMode")
    node_affinity = optional_mapping("nodeAffinity")
    host_path = optional_mapping("hostPath")
    local = optional_mapping("local")
    csi = optional_mapping("csi")
    nfs = optional_mapping("nfs")


class PersistentVolumeStatus(View):
    __slots__ = ()
    phase = string("phase")
    message = string("message")
    reason = string("reason")


class PersistentVolume(TypedObject):
    __slots__ = ()
    spec = nested("spec", PersistentVolumeSpec)
    status = nested("status", PersistentVolumeStatus)
