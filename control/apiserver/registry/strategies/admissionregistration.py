"""Validating- and MutatingWebhookConfigurations (upstream pkg/registry/admissionregistration/
{validating,mutating}webhookconfiguration/strategy.go): generation starts at 1 and grows when the webhooks
change. The admission chain calls them (control/apiserver/admission/webhook/)."""

from __future__ import annotations

from control.apiserver.registry.strategies.base import Strategy


class WebhookConfigurationStrategy(Strategy):
    tracks_generation = True
