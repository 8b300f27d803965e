"""The admission chain the API server runs, in upstream's recommended order (pkg/kubeapiserver/options/
plugins.go `AllOrderedPlugins`): NamespaceLifecycle first, the mutating plugins with the mutating admission
webhooks last of them, then validation — the kind's own (the strategy's Validate, which upstream's store
runs before its validating admission), the validating plugins (NodeRestriction first), the
ValidatingAdmissionPolicies, the validating admission webhooks — and ResourceQuota last, so a write another
plugin or a webhook refuses never takes quota.

What is particular to one kind (service allocations, namespace finalizers, ...) is in that kind's strategy
(registry/strategies/), not here.
"""

from __future__ import annotations

from collections.abc import Collection

from control.apiserver.admission.chain import Chain, MutatingPlugin, Reader, ValidatingPlugin
from control.apiserver.admission.config import AdmissionConfig
from control.apiserver.admission.lifecycle import NamespaceLifecycle
from control.apiserver.admission.limitranger import LimitRangerBounds, LimitRangerDefaults
from control.apiserver.admission.noderestriction import NodeRestriction
from control.apiserver.admission.nodetaint import TaintNodesByCondition
from control.apiserver.admission.podsecurity import PodSecurity
from control.apiserver.admission.policy import ValidatingAdmissionPolicies
from control.apiserver.admission.priority import OneGlobalDefault, PodPriority
from control.apiserver.admission.quota import QuotaAdmission
from control.apiserver.admission.serviceaccount import ServiceAccount
from control.apiserver.admission.storageclass import DefaultStorageClass
from control.apiserver.admission.webhook.dispatch import MutatingWebhooks, Served, ValidatingWebhooks


def chain(reader: Reader, *, validation: ValidatingPlugin, endpoint_routing: bool = True,
          served: Served | None = None, config: AdmissionConfig | None = None,
          disabled: Collection[str] = ()) -> Chain:
    """The chain over `reader` (the registry); `validation` is the kind's own validation, run first of the
    validating plugins. Webhooks reach a Service's endpoints (`endpoint_routing`) or its ClusterIP; `served`
    lists what the server serves, for the webhooks' matchPolicy Equivalent; `config` is what the server's
    admission configuration file says; `disabled` names plugins left out (upstream
    --disable-admission-plugins)."""
    config = config or AdmissionConfig()
    mutating: list[MutatingPlugin] = [
        NamespaceLifecycle(reader), LimitRangerDefaults(reader), ServiceAccount(reader), TaintNodesByCondition(),
        PodPriority(reader), DefaultStorageClass(reader),
        MutatingWebhooks(reader, endpoint_routing=endpoint_routing, served=served)]
    validating: list[ValidatingPlugin] = [
        validation, LimitRangerBounds(reader), NodeRestriction(reader), PodSecurity(reader, config.pod_security),
        OneGlobalDefault(reader), ValidatingAdmissionPolicies(reader, served=served),
        ValidatingWebhooks(reader, endpoint_routing=endpoint_routing, served=served), QuotaAdmission(reader)]
    return Chain(mutating=[plugin for plugin in mutating if plugin.name not in disabled],
                 validating=[plugin for plugin in validating if plugin.name not in disabled])
