"""Validating- and MutatingWebhookConfigurations, ValidatingAdmissionPolicies and their bindings (upstream
pkg/registry/admissionregistration/{validating,mutating}webhookconfiguration, validatingadmissionpolicy,
validatingadmissionpolicybinding strategy.go): generation starts at 1 and grows when the spec changes; a
policy's status is the server's, dropped on create. The admission chain acts on them
(control/apiserver/admission/webhook/, admission/policy.py)."""

from __future__ import annotations

from control.apiserver.registry.strategies.base import Strategy


class WebhookConfigurationStrategy(Strategy):
    tracks_generation = True


class ValidatingAdmissionPolicyStrategy(Strategy):
    tracks_generation = True
    resets_status_on_create = True
