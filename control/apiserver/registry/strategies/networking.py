"""Ingresses, IngressClasses and NetworkPolicies (upstream pkg/registry/networking/{ingress,ingressclass,
networkpolicy}/strategy.go).

All three start at `metadata.generation` 1 and bump it when anything outside metadata and status changes
(ingress controllers report against it); an Ingress's status is the controller's (`/status`), dropped
on create. Defaults and validation live in control.api (defaults.py, validation/networking.py).
"""

from __future__ import annotations

from types import MappingProxyType

from control.apiserver.registry.strategies.base import Strategy


class IngressStrategy(Strategy):
    tracks_generation = True
    resets_status_on_create = True
    # IngressStatus.loadBalancer is a struct: Go's encoder always writes it, even empty.
    status_zero_values = MappingProxyType({"loadBalancer": {}})


class IngressClassStrategy(Strategy):
    tracks_generation = True


class NetworkPolicyStrategy(Strategy):
    tracks_generation = True
