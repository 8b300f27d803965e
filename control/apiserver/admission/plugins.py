"""The admission chain the API server runs, in upstream's recommended order (pkg/kubeapiserver/options/
plugins.go `AllOrderedPlugins`): NamespaceLifecycle first, the mutating plugins, then validation — the
kind's own (the strategy's Validate, which upstream's store runs before its validating admission), then
the validating plugins — and ResourceQuota last, so a write another plugin refuses never takes quota.

What is particular to one kind (service allocations, namespace finalizers, ...) is in that kind's strategy
(registry/strategies/), not here.
"""

from __future__ import annotations

from control.apiserver.admission.chain import Chain, Reader, ValidatingPlugin
from control.apiserver.admission.config import AdmissionConfig
from control.apiserver.admission.lifecycle import NamespaceLifecycle
from control.apiserver.admission.limitranger import LimitRangerBounds, LimitRangerDefaults
from control.apiserver.admission.nodetaint import TaintNodesByCondition
from control.apiserver.admission.podsecurity import PodSecurity
from control.apiserver.admission.priority import OneGlobalDefault, PodPriority
from control.apiserver.admission.quota import QuotaAdmission
from control.apiserver.admission.storageclass import DefaultStorageClass


def chain(reader: Reader, *, validation: ValidatingPlugin, config: AdmissionConfig | None = None) -> Chain:
    """The chain over `reader` (the registry); `validation` is the kind's own validation, run first of the
    validating plugins; `config` is what the server's admission configuration file says."""
    config = config or AdmissionConfig()
    return Chain(mutating=[NamespaceLifecycle(reader), LimitRangerDefaults(reader), TaintNodesByCondition(),
                           PodPriority(reader), DefaultStorageClass(reader)],
                 validating=[validation, LimitRangerBounds(reader), PodSecurity(reader, config.pod_security),
                             OneGlobalDefault(reader), QuotaAdmission(reader)])
