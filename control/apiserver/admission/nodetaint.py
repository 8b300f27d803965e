"""TaintNodesByCondition, a mutating plugin (upstream: plugin/pkg/admission/nodetaint/admission.go): a created
Node gets `node.kubernetes.io/not-ready:NoSchedule` unless it has that taint already, so nothing is scheduled
onto it before its kubelet has reported Ready. The node lifecycle controller removes the taint once the
node's conditions no longer call for it (control/controllers/nodelifecycle/health.py), as upstream's
doNoScheduleTaintingPass does.
"""

from __future__ import annotations

from control.api.taints import NO_SCHEDULE, TAINT_NOT_READY
from control.apiserver.admission.chain import Attributes, Operation


class TaintNodesByCondition:
    name = "TaintNodesByCondition"

    def admit(self, attributes: Attributes) -> None:
        obj = attributes.obj
        if (attributes.operation is not Operation.CREATE or attributes.resource.plural != "nodes"
                or attributes.resource.group or attributes.subresource or obj is None):
            return
        spec = obj.get("spec")
        if spec is None:
            spec = obj["spec"] = {}
        if not isinstance(spec, dict):
            return  # the strategy's validation refuses it
        taints = spec.get("taints") or []
        if not isinstance(taints, list):
            return
        if not any(isinstance(t, dict) and t.get("key") == TAINT_NOT_READY and t.get("effect") == NO_SCHEDULE
                   for t in taints):
            spec["taints"] = [*taints, {"key": TAINT_NOT_READY, "effect": NO_SCHEDULE}]
