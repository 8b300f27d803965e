"""The cells of server-side table rows, one function per resource (what `kubectl get` prints).

Upstream: pkg/printers/internalversion/printers.go (the `print*` functions),
k8s.io/apimachinery/pkg/util/duration (`HumanDuration`) and, for resources without a printer,
k8s.io/apiserver/pkg/registry/rest/table.go (the default Name / Created At row). The column definitions
that go with these cells are in control/apiserver/endpoints/tables.py.

The API server prints with `Wide: true`: every row carries the priority-1 cells too and kubectl hides
those columns unless asked for `-o wide`. Cell logic follows upstream function by function, since users
read these strings and scripts grep them (`Running`, `CrashLoopBackOff`, `Init:0/1`, `80:30080/TCP`).

Objects are wire dicts that went through defaulting; where a defaulted field may still be missing
(`spec.replicas`), the upstream default is assumed. `now` is always passed in: no clock is read here.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from control.api.typed import ObjectMeta, TypedObject
from control.api.volumes import access_modes_string, claim_class, is_default_class, volume_class
from control.apimachinery.labels import SelectorError, selector_from_label_selector, selector_from_set
from control.apimachinery.meta import get_condition, parse_timestamp
from control.apimachinery.quantity import Quantity, QuantityError

Obj = Mapping[str, Any]


def human_duration(seconds: float) -> str:
    """duration.HumanDuration: two significant units at most, e.g. `90s`, `2m30s`, `15m`, `5h2m`, `3d4h`."""
    whole = int(seconds)
    if whole < -1:  # two seconds of clock skew between machines still reads as "now"
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        return f"{minutes}m" if whole % 60 == 0 else f"{minutes}m{whole % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


def since(timestamp: str | None, now: datetime) -> str:
    """translateTimestampSince: the age of an RFC 3339 timestamp, `<unknown>` when unset or unreadable."""
    if not timestamp:
        return "<unknown>"
    try:
        return human_duration((now - parse_timestamp(timestamp)).total_seconds())
    except ValueError:
        return "<unknown>"


def _age(obj: Obj, now: datetime) -> str:
    return since(_meta(obj).creation_timestamp, now)


def _meta(obj: Obj) -> ObjectMeta:
    return TypedObject(obj).metadata


def _name(obj: Obj) -> str:
    return _meta(obj).name


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _status(obj: Obj) -> Mapping[str, Any]:
    return obj.get("status") or {}


def _format_labels(labels: Mapping[str, str] | None) -> str:
    """labels.FormatLabels: `k=v` pairs sorted by key, `<none>` when empty."""
    return str(selector_from_set(labels)) or "<none>"


def _label_selector(selector: Mapping[str, Any] | None) -> str:
    """metav1.FormatLabelSelector: canonical selector string, `<none>` when empty, `<error>` when malformed."""
    try:
        return str(selector_from_label_selector(selector)) or "<none>"
    except SelectorError:
        return "<error>"


def _containers_and_images(pod_spec: Mapping[str, Any]) -> list[str]:
    """layoutContainerCells: container names and images, each comma-joined."""
    containers = pod_spec.get("containers") or []
    return [",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)]


def _template_spec(obj: Obj) -> Mapping[str, Any]:
    return (_spec(obj).get("template") or {}).get("spec") or {}


def _is_true(obj: Obj, condition_type: str) -> bool:
    condition = get_condition(obj, condition_type)
    return condition is not None and condition.get("status") == "True"


def _terminated_reason(terminated: Mapping[str, Any], prefix: str) -> str:
    if terminated.get("reason"):
        reason: str = terminated["reason"]
        return prefix + reason
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode', 0)}"


def _finished_at(container_status: Mapping[str, Any]) -> datetime | None:
    terminated = (container_status.get("lastState") or {}).get("terminated") or {}
    try:
        return parse_timestamp(terminated["finishedAt"]) if terminated.get("finishedAt") else None
    except ValueError:
        return None


def _latest(*moments: datetime | None) -> datetime | None:
    present = [m for m in moments if m is not None]
    return max(present) if present else None


def pod_cells(pod: Obj, now: datetime) -> list[Any]:
    """printPod: READY counts ready containers (and started sidecars), STATUS is the most telling reason.

    Precedence as upstream: pod reason, then a failing or pending init container (`Init:...`), then the
    last container's waiting/terminated reason, then `Terminating` for a pod being deleted.
    """
    spec, status = _spec(pod), _status(pod)
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    sidecars = {name for name, c in init_specs.items() if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + len(sidecars)
    ready = restarts = sidecar_restarts = 0
    last_restart = last_sidecar_restart = None
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    initializing = False
    for index, container in enumerate(status.get("initContainerStatuses") or []):
        restarts += container.get("restartCount", 0)
        last_restart = _latest(last_restart, _finished_at(container))
        is_sidecar = container.get("name") in sidecars
        if is_sidecar:
            sidecar_restarts += container.get("restartCount", 0)
            last_sidecar_restart = _latest(last_sidecar_restart, _finished_at(container))
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if is_sidecar and container.get("started"):
            ready += 1 if container.get("ready") else 0
            continue
        if terminated is not None:
            reason = _terminated_reason(terminated, "Init:")
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{index}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _is_true(pod, "Initialized"):
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for container in reversed(status.get("containerStatuses") or []):
            restarts += container.get("restartCount", 0)
            last_restart = _latest(last_restart, _finished_at(container))
            state = container.get("state") or {}
            waiting, terminated = state.get("waiting") or {}, state.get("terminated")
            if waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None:
                reason = _terminated_reason(terminated, "")
            elif container.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _is_true(pod, "Ready") else "NotReady"

    deleting = bool(_meta(pod).deletion_timestamp)
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts and last_restart is not None:
        restarts_cell = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"

    pod_ips = status.get("podIPs") or []
    pod_ip = (pod_ips[0].get("ip") if pod_ips else status.get("podIP")) or "<none>"
    gates = spec.get("readinessGates") or []
    readiness_gates = "<none>"
    if gates:
        passed = sum(1 for gate in gates if _is_true(pod, gate.get("conditionType", "")))
        readiness_gates = f"{passed}/{len(gates)}"
    return [_name(pod), f"{ready}/{total}", reason, restarts_cell, _age(pod, now),
            pod_ip, spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>", readiness_gates]


def pod_row_conditions(pod: Obj) -> list[dict[str, str]]:
    """podSuccessConditions / podFailedConditions: kubectl marks finished pods with them."""
    phase = _status(pod).get("phase")
    if phase == "Succeeded":
        return [{"type": "Completed", "status": "True", "reason": "Succeeded",
                 "message": "The pod has completed successfully."}]
    if phase == "Failed":
        return [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]
    return []


def _service_external_ip(service: Obj) -> str:
    """getServiceExternalIP (server-side printing is wide, so load-balancer addresses are not shortened)."""
    spec = _spec(service)
    external_ips = list(spec.get("externalIPs") or [])
    service_type = spec.get("type") or "ClusterIP"
    if service_type in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) or "<none>"
    if service_type == "LoadBalancer":
        ingress = (_status(service).get("loadBalancer") or {}).get("ingress") or []
        addresses = sorted({entry.get("ip") or entry.get("hostname") for entry in ingress} - {None, ""})
        return ",".join(addresses + external_ips) or "<pending>"
    if service_type == "ExternalName":
        external_name: str = spec.get("externalName", "")
        return external_name
    return "<unknown>"


def service_ports(ports: Sequence[Mapping[str, Any]]) -> str:
    """makePortString: `80/TCP`, or `80:30080/TCP` with a node port; `<none>` for a service without ports."""
    pieces = []
    for port in ports:
        protocol = port.get("protocol") or "TCP"
        node_port = port.get("nodePort")
        pieces.append(f"{port.get('port')}:{node_port}/{protocol}" if node_port else f"{port.get('port')}/{protocol}")
    return ",".join(pieces) or "<none>"


def service_cells(service: Obj, now: datetime) -> list[Any]:
    spec = _spec(service)
    cluster_ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return [_name(service), spec.get("type") or "ClusterIP", cluster_ips[0] if cluster_ips else "<none>",
            _service_external_ip(service), service_ports(spec.get("ports") or []), _age(service, now),
            _format_labels(spec.get("selector"))]


def _join_host_port(host: str, port: Any) -> str:
    """net.JoinHostPort: IPv6 addresses get brackets."""
    try:
        is_v6 = ipaddress.ip_address(host).version == 6
    except ValueError:
        is_v6 = ":" in host
    return f"[{host}]:{port}" if is_v6 else f"{host}:{port}"


def format_endpoints(endpoints: Obj, limit: int = 3) -> str:
    """formatEndpoints: the first three ready `ip:port` pairs and `+ N more...`; `<none>` without subsets."""
    subsets = endpoints.get("subsets") or []
    if not subsets:
        return "<none>"
    shown: list[str] = []
    count = 0
    for subset in subsets:
        addresses = [a.get("ip", "") for a in subset.get("addresses") or []]
        targets = ([(ip, None) for ip in addresses] if not subset.get("ports")
                   else [(ip, port.get("port")) for port in subset["ports"] for ip in addresses])
        count += len(targets)
        for ip, port in targets:
            if len(shown) < limit:
                shown.append(ip if port is None else _join_host_port(ip, port))
    text = ",".join(shown)
    return f"{text} + {count - limit} more..." if count > limit else text


def node_cells(node: Obj, now: datetime) -> list[Any]:
    """printNode: Ready/NotReady from the Ready condition (`Unknown` without one), `SchedulingDisabled`
    when cordoned; roles from `node-role.kubernetes.io/<role>` labels and `kubernetes.io/role`."""
    status = _status(node)
    ready = get_condition(node, "Ready")
    states = [] if ready is None else ["Ready" if ready.get("status") == "True" else "NotReady"]
    if not states:
        states.append("Unknown")
    if _spec(node).get("unschedulable"):
        states.append("SchedulingDisabled")
    labels = _meta(node).labels
    roles = {key.removeprefix("node-role.kubernetes.io/") for key in labels
             if key.startswith("node-role.kubernetes.io/") and key != "node-role.kubernetes.io/"}
    if labels.get("kubernetes.io/role"):
        roles.add(labels["kubernetes.io/role"])
    addresses = status.get("addresses") or []

    def address(kind: str) -> str:
        return next((a.get("address") for a in addresses if a.get("type") == kind), None) or "<none>"

    info = status.get("nodeInfo") or {}
    return [_name(node), ",".join(states), ",".join(sorted(roles)) or "<none>", _age(node, now),
            info.get("kubeletVersion", ""), address("InternalIP"), address("ExternalIP"),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


def _job_status(job: Obj) -> str:
    """The Job STATUS column: the first of Complete, Failed, Terminating, Suspended, FailureTarget, Running."""
    if _is_true(job, "Complete"):
        return "Complete"
    if _is_true(job, "Failed"):
        return "Failed"
    if _meta(job).deletion_timestamp:
        return "Terminating"
    if _is_true(job, "Suspended"):
        return "Suspended"
    if _is_true(job, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def job_cells(job: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(job), _status(job)
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif (spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    duration = ""
    if status.get("startTime"):
        end = parse_timestamp(status["completionTime"]) if status.get("completionTime") else now
        duration = human_duration((end - parse_timestamp(status["startTime"])).total_seconds())
    return [_name(job), _job_status(job), completions, duration, _age(job, now),
            *_containers_and_images(_template_spec(job)), _label_selector(spec.get("selector"))]


def cronjob_cells(cronjob: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(cronjob), _status(cronjob)
    suspend = spec.get("suspend")
    last = status.get("lastScheduleTime")
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return [_name(cronjob), spec.get("schedule", ""), spec.get("timeZone") or "<none>",
            "<unset>" if suspend is None else str(bool(suspend)), len(status.get("active") or []),
            since(last, now) if last else "<none>", _age(cronjob, now),
            *_containers_and_images((job_spec.get("template") or {}).get("spec") or {}),
            _label_selector(job_spec.get("selector"))]


def event_cells(event: Obj, now: datetime) -> list[Any]:
    """printEvent: LAST SEEN prefers the series, then lastTimestamp, then eventTime (events.k8s.io style)."""
    series = event.get("series") or {}
    last_seen = series.get("lastObservedTime") or event.get("lastTimestamp") or event.get("eventTime")
    first_seen = event.get("firstTimestamp") or event.get("eventTime")
    involved = event.get("involvedObject") or {}
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return [since(last_seen, now), event.get("type", ""), event.get("reason", ""),
            f"{(involved.get('kind') or '').lower()}/{involved.get('name') or ''}", involved.get("fieldPath", ""),
            f"{component}, {instance}" if instance else component, (event.get("message") or "").strip(),
            since(first_seen, now), series.get("count") if series else event.get("count", 0), _name(event)]


def resource_quota_cells(quota: Obj, now: datetime) -> list[Any]:
    """printResourceQuota: `used/hard` per resource, `limits.*` in LIMIT and everything else in REQUEST."""
    hard, used = _status(quota).get("hard") or {}, _status(quota).get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        text = f"{name}: {used.get(name, '0')}/{hard[name]}"
        (limits if name.startswith("limits.") else requests).append(text)
    return [_name(quota), _age(quota, now), ", ".join(requests), ", ".join(limits)]


def _replicas(obj: Obj) -> int:
    replicas = _spec(obj).get("replicas")
    return 1 if replicas is None else replicas  # the API default


def _ready_of(obj: Obj) -> str:
    return f"{_status(obj).get('readyReplicas', 0)}/{_replicas(obj)}"


def endpoints_cells(endpoints: Obj, now: datetime) -> list[Any]:
    return [_name(endpoints), format_endpoints(endpoints), _age(endpoints, now)]


def namespace_cells(namespace: Obj, now: datetime) -> list[Any]:
    return [_name(namespace), _status(namespace).get("phase", ""), _age(namespace, now)]


def configmap_cells(configmap: Obj, now: datetime) -> list[Any]:
    """DATA counts keys of both `data` and `binaryData`."""
    data = len(configmap.get("data") or {}) + len(configmap.get("binaryData") or {})
    return [_name(configmap), data, _age(configmap, now)]


def secret_cells(secret: Obj, now: datetime) -> list[Any]:
    return [_name(secret), secret.get("type", ""), len(secret.get("data") or {}), _age(secret, now)]


def serviceaccount_cells(account: Obj, now: datetime) -> list[Any]:
    return [_name(account), len(account.get("secrets") or []), _age(account, now)]


def lease_cells(lease: Obj, now: datetime) -> list[Any]:
    return [_name(lease), _spec(lease).get("holderIdentity") or "", _age(lease, now)]


def pod_disruption_budget_cells(pdb: Obj, now: datetime) -> list[Any]:
    """printPodDisruptionBudget: the int-or-percent bounds as written, `N/A` for the one not set."""
    spec = _spec(pdb)
    bounds = [str(spec["minAvailable"]) if spec.get("minAvailable") is not None else "N/A",
              str(spec["maxUnavailable"]) if spec.get("maxUnavailable") is not None else "N/A"]
    return [_name(pdb), *bounds, _status(pdb).get("disruptionsAllowed", 0), _age(pdb, now)]


def replication_controller_cells(rc: Obj, now: datetime) -> list[Any]:
    """Like replica sets, but the selector is a plain label map (`<none>` when empty)."""
    return [_name(rc), _replicas(rc), _status(rc).get("replicas", 0), _status(rc).get("readyReplicas", 0),
            _age(rc, now), *_containers_and_images(_template_spec(rc)), _format_labels(_spec(rc).get("selector"))]


def replicaset_cells(rs: Obj, now: datetime) -> list[Any]:
    return [_name(rs), _replicas(rs), _status(rs).get("replicas", 0), _status(rs).get("readyReplicas", 0),
            _age(rs, now), *_containers_and_images(_template_spec(rs)), _label_selector(_spec(rs).get("selector"))]


def deployment_cells(deployment: Obj, now: datetime) -> list[Any]:
    status = _status(deployment)
    return [_name(deployment), _ready_of(deployment), status.get("updatedReplicas", 0),
            status.get("availableReplicas", 0), _age(deployment, now),
            *_containers_and_images(_template_spec(deployment)), _label_selector(_spec(deployment).get("selector"))]


def daemonset_cells(daemonset: Obj, now: datetime) -> list[Any]:
    status = _status(daemonset)
    counts = [status.get(key, 0) for key in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady",
                                             "updatedNumberScheduled", "numberAvailable")]
    return [_name(daemonset), *counts, _format_labels(_template_spec(daemonset).get("nodeSelector")),
            _age(daemonset, now), *_containers_and_images(_template_spec(daemonset)),
            _label_selector(_spec(daemonset).get("selector"))]


def controller_revision_cells(revision: Obj, now: datetime) -> list[Any]:
    """printControllerRevision: the controller as `kind.group/name` in lower case, `<none>` without one."""
    owner = _meta(revision).controller_ref
    controller = "<none>"
    if owner is not None:
        group = owner.api_version.rpartition("/")[0]
        if group:
            controller = f"{owner.kind.lower()}.{group}/{owner.name}"
        else:
            controller = f"{owner.kind.lower()}/{owner.name}"
    return [_name(revision), controller, revision.get("revision", 0), _age(revision, now)]


def _hpa_metric(spec: Mapping[str, Any], current: Mapping[str, Any] | None) -> str:
    """formatHPAMetrics for one metric: `name: current/target` (`<unknown>` before the controller measured)."""
    kind = spec.get("type")
    source_key = {"Resource": "resource", "ContainerResource": "containerResource"}.get(str(kind))
    if source_key is None:
        return f"<{str(kind or 'unknown').lower()} metric>"
    source = spec.get(source_key) or {}
    target = source.get("target") or {}
    measured = ((current or {}).get(source_key) or {}).get("current") or {}
    name = source.get("name", "")
    if target.get("averageValue") is not None:
        value = measured.get("averageValue")
        return f"{name}: {value if value is not None else '<unknown>'}/{target['averageValue']}"
    utilization = measured.get("averageUtilization")
    now = f"{utilization}%" if utilization is not None else "<unknown>"
    wanted = f"{target['averageUtilization']}%" if target.get("averageUtilization") is not None else "<auto>"
    return f"{name}: {now}/{wanted}"


def hpa_cells(hpa: Obj, now: datetime) -> list[Any]:
    """printHorizontalPodAutoscaler: REFERENCE Kind/name, TARGETS (two metrics, then `+ N more...`)."""
    spec, status = _spec(hpa), _status(hpa)
    ref = spec.get("scaleTargetRef") or {}
    metrics = spec.get("metrics") or []
    current = status.get("currentMetrics") or []
    shown = [_hpa_metric(m, current[i] if i < len(current) else None) for i, m in enumerate(metrics[:2])]
    targets = ", ".join(shown) if shown else "<none>"
    if len(metrics) > 2:
        targets += f" + {len(metrics) - 2} more..."
    min_pods = str(spec["minReplicas"]) if spec.get("minReplicas") is not None else "<unset>"
    return [_name(hpa), f"{ref.get('kind', '')}/{ref.get('name', '')}", targets, min_pods,
            int(spec.get("maxReplicas") or 0), int(status.get("currentReplicas") or 0), _age(hpa, now)]


def statefulset_cells(statefulset: Obj, now: datetime) -> list[Any]:
    return [_name(statefulset), _ready_of(statefulset), _age(statefulset, now),
            *_containers_and_images(_template_spec(statefulset))]


def priority_class_cells(priority_class: Obj, now: datetime) -> list[Any]:
    """printPriorityClass: the value as an integer, globalDefault as a boolean, preemptionPolicy after Age."""
    return [_name(priority_class), priority_class.get("value") or 0, bool(priority_class.get("globalDefault")),
            _age(priority_class, now), priority_class.get("preemptionPolicy") or ""]


def _list_with_more(shown: list[str], count: int, limit: int) -> str:
    """listWithMoreString: `a,b,c + N more...`, `<unset>` for an empty list."""
    if count > limit:
        return f"{','.join(shown)} + {count - limit} more..."
    return ",".join(shown) or "<unset>"


def endpoint_slice_cells(slice_: Obj, now: datetime) -> list[Any]:
    """printEndpointSlice: formatDiscoveryPorts (the number, else the name, else `*`) and
    formatDiscoveryEndpoints (every address of every endpoint), three of each at most."""
    ports = slice_.get("ports") or []
    port_texts = [str(port["port"]) if port.get("port") is not None else (port.get("name") or "*")
                  for port in ports[:3]]
    addresses = [address for endpoint in slice_.get("endpoints") or [] for address in endpoint.get("addresses") or []]
    return [_name(slice_), slice_.get("addressType", ""), _list_with_more(port_texts, len(ports), 3),
            _list_with_more(addresses[:3], len(addresses), 3), _age(slice_, now)]


def _storage_quantity(resources: Mapping[str, Any] | None) -> str:
    """A `storage` quantity as upstream's Quantity.String() writes it (canonical), "" when absent."""
    value = (resources or {}).get("storage")
    if value is None:
        return ""
    try:
        return str(Quantity(str(value)))
    except (QuantityError, ValueError):
        return str(value)


def _phase(obj: Obj) -> str:
    """The phase, or `Terminating` once a delete was asked for."""
    return "Terminating" if _meta(obj).deletion_timestamp else _status(obj).get("phase", "")


def persistent_volume_cells(volume: Obj, now: datetime) -> list[Any]:
    """printPersistentVolume: capacity, access modes, reclaim policy, phase, `namespace/name` of the claim,
    class, VolumeAttributesClass (`<unset>`: not served), reason, age, volumeMode."""
    spec = _spec(volume)
    ref = spec.get("claimRef")
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if isinstance(ref, Mapping) else ""
    return [_name(volume), _storage_quantity(spec.get("capacity")), access_modes_string(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy", ""), _phase(volume), claim, volume_class(volume), "<unset>",
            _status(volume).get("reason", ""), _age(volume, now), spec.get("volumeMode") or "<unset>"]


def persistent_volume_claim_cells(claim: Obj, now: datetime) -> list[Any]:
    """printPersistentVolumeClaim: capacity and access modes only once a volume is named (from status)."""
    spec, status = _spec(claim), _status(claim)
    capacity = modes = ""
    if spec.get("volumeName"):
        capacity = _storage_quantity(status.get("capacity"))
        modes = access_modes_string(status.get("accessModes"))
    return [_name(claim), _phase(claim), spec.get("volumeName", ""), capacity, modes, claim_class(claim),
            "<unset>", _age(claim, now), spec.get("volumeMode") or "<unset>"]


def storage_class_cells(storage_class: Obj, now: datetime) -> list[Any]:
    """printStorageClass: the default class's name gets ` (default)`; unset fields print their defaults."""
    name = _name(storage_class) + (" (default)" if is_default_class(storage_class) else "")
    return [name, storage_class.get("provisioner", ""), storage_class.get("reclaimPolicy") or "Delete",
            storage_class.get("volumeBindingMode") or "Immediate", bool(storage_class.get("allowVolumeExpansion")),
            _age(storage_class, now)]


def default_cells(obj: Obj, now: datetime) -> list[Any]:
    """rest.DefaultTableConvertor: the name and the raw creation timestamp (a `date` column, not an age)."""
    return [_name(obj), _meta(obj).creation_timestamp]


def role_cells(role: Obj, now: datetime) -> list[Any]:
    """printRole / printClusterRole: the name and the creation time in RFC 3339 (`<unknown>` without one)."""
    return [_name(role), _meta(role).creation_timestamp or "<unknown>"]


def binding_cells(binding: Obj, now: datetime) -> list[Any]:
    """printRoleBinding / printClusterRoleBinding: ROLE `Kind/name`; the wide USERS, GROUPS and
    SERVICEACCOUNTS (`namespace/name`) joined by `, ` (rbac.SubjectsStrings)."""
    given = binding.get("roleRef")
    ref: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    found: dict[str, list[str]] = {"User": [], "Group": [], "ServiceAccount": []}
    for subject in binding.get("subjects") or []:
        if not isinstance(subject, Mapping) or subject.get("kind") not in found:
            continue
        name = str(subject.get("name", ""))
        if subject.get("kind") == "ServiceAccount":
            name = f"{subject.get('namespace', '')}/{name}"
        found[str(subject["kind"])].append(name)
    return [_name(binding), f"{ref.get('kind', '')}/{ref.get('name', '')}", _age(binding, now),
            ", ".join(found["User"]), ", ".join(found["Group"]), ", ".join(found["ServiceAccount"])]


def _load_balancer_addresses(load_balancer: Mapping[str, Any] | None) -> str:
    """ingressLoadBalancerStatusStringer (wide): every ingress point's IP or hostname, comma-joined."""
    ingress = (load_balancer or {}).get("ingress") or []
    return ",".join(entry.get("ip") or entry.get("hostname") or "" for entry in ingress
                    if isinstance(entry, Mapping) and (entry.get("ip") or entry.get("hostname")))


def _ingress_hosts(rules: Sequence[Mapping[str, Any]]) -> str:
    """formatHosts: the first three rule hosts, `*` when no rule names one, `+ N more...` past three."""
    hosts = [str(rule["host"]) for rule in rules[:3] if rule.get("host")]
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - 3} more..." if len(rules) > 3 else text


def ingress_cells(ingress: Obj, now: datetime) -> list[Any]:
    """printIngress: CLASS `<none>` without ingressClassName, PORTS `80, 443` once any TLS is configured."""
    spec = _spec(ingress)
    rules = [rule for rule in spec.get("rules") or [] if isinstance(rule, Mapping)]
    return [_name(ingress), spec.get("ingressClassName") or "<none>", _ingress_hosts(rules),
            _load_balancer_addresses(_status(ingress).get("loadBalancer")),
            "80, 443" if spec.get("tls") else "80", _age(ingress, now)]


def ingress_class_cells(ingress_class: Obj, now: datetime) -> list[Any]:
    """printIngressClass: PARAMETERS `Kind.apiGroup/name` (`<none>` without parameters)."""
    spec = _spec(ingress_class)
    parameters = spec.get("parameters")
    text = "<none>"
    if isinstance(parameters, Mapping):
        text = str(parameters.get("kind", ""))
        if parameters.get("apiGroup"):
            text += f".{parameters['apiGroup']}"
        text += f"/{parameters.get('name', '')}"
    return [_name(ingress_class), spec.get("controller", ""), text, _age(ingress_class, now)]


def network_policy_cells(policy: Obj, now: datetime) -> list[Any]:
    return [_name(policy), _label_selector(_spec(policy).get("podSelector") or {}), _age(policy, now)]


def csr_condition(csr: Obj) -> str:
    """extractCSRStatus: Denied over Approved over Pending, then `,Failed` and `,Issued`."""
    kinds = {c.get("type") for c in _status(csr).get("conditions") or [] if isinstance(c, Mapping)}
    text = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        text += ",Failed"
    if _status(csr).get("certificate"):
        text += ",Issued"
    return text


def certificate_signing_request_cells(csr: Obj, now: datetime) -> list[Any]:
    """printCertificateSigningRequest: AGE second; REQUESTEDDURATION as a human duration or `<none>`."""
    spec = _spec(csr)
    seconds = spec.get("expirationSeconds")
    duration = human_duration(seconds) if isinstance(seconds, int) else "<none>"
    return [_name(csr), _age(csr, now), spec.get("signerName") or "<none>", spec.get("username", ""), duration,
            csr_condition(csr)]


def runtime_class_cells(runtime_class: Obj, now: datetime) -> list[Any]:
    return [_name(runtime_class), runtime_class.get("handler", ""), _age(runtime_class, now)]


def csi_driver_cells(driver: Obj, now: datetime) -> list[Any]:
    """printCSIDriver: the booleans with their API defaults, token audiences (`<unset>` without
    tokenRequests), lifecycle modes (`<none>` when empty)."""
    spec = _spec(driver)
    requests = spec.get("tokenRequests")
    tokens = ",".join(str(r.get("audience", "")) for r in requests if isinstance(r, Mapping)) \
        if isinstance(requests, list) else "<unset>"
    modes = ",".join(spec.get("volumeLifecycleModes") or []) or "<none>"
    return [_name(driver), _flag(spec, "attachRequired", True), _flag(spec, "podInfoOnMount", False),
            _flag(spec, "storageCapacity", False), tokens, _flag(spec, "requiresRepublish", False), modes,
            _age(driver, now)]


def _flag(spec: Mapping[str, Any], key: str, default: bool) -> bool:
    value = spec.get(key)
    return value if isinstance(value, bool) else default


def csi_node_cells(node: Obj, now: datetime) -> list[Any]:
    return [_name(node), len(_spec(node).get("drivers") or []), _age(node, now)]


def volume_attachment_cells(attachment: Obj, now: datetime) -> list[Any]:
    spec = _spec(attachment)
    return [_name(attachment), spec.get("attacher", ""), (spec.get("source") or {}).get("persistentVolumeName") or "",
            spec.get("nodeName", ""), bool(_status(attachment).get("attached")), _age(attachment, now)]


def webhook_configuration_cells(configuration: Obj, now: datetime) -> list[Any]:
    return [_name(configuration), len(configuration.get("webhooks") or []), _age(configuration, now)]


def admission_policy_cells(policy: Obj, now: datetime) -> list[Any]:
    """VALIDATIONS the number of rules, PARAMKIND `apiVersion/kind` or `<unset>`, as upstream's printer."""
    spec = _spec(policy)
    kind = spec.get("paramKind")
    param = f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}" if isinstance(kind, Mapping) else "<unset>"
    return [_name(policy), len(spec.get("validations") or []), param, _age(policy, now)]


def admission_policy_binding_cells(binding: Obj, now: datetime) -> list[Any]:
    """POLICYNAME, PARAMREF `namespace/name` (`*/name` without a namespace) or `<unset>`."""
    spec = _spec(binding)
    ref = spec.get("paramRef")
    param = "<unset>"
    if isinstance(ref, Mapping):
        param = f"{ref.get('namespace') or '*'}/{ref.get('name') or '*'}"
    return [_name(binding), spec.get("policyName", ""), param, _age(binding, now)]


def api_service_cells(service: Obj, now: datetime) -> list[Any]:
    """kube-aggregator's APIService table: SERVICE `Local` or `ns/name`; AVAILABLE the Available condition's
    status, with its reason in parentheses unless True."""
    reference = _spec(service).get("service")
    where = f"{reference.get('namespace', '')}/{reference.get('name', '')}" if isinstance(reference, Mapping) \
        else "Local"
    available = "Unknown"
    condition = get_condition(service, "Available")
    if condition is not None:
        state = condition.get("status", "")
        available = f"{state} ({condition['reason']})" if state != "True" and condition.get("reason") else state
    return [_name(service), where, available, _age(service, now)]


def component_status_cells(component: Obj, now: datetime) -> list[Any]:
    """printComponentStatus: the Healthy condition decides STATUS; its message and error follow."""
    for condition in component.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Healthy":
            healthy = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            return [_name(component), healthy, condition.get("message", ""), condition.get("error", "")]
    return [_name(component), "Unknown", "", ""]
