"""Typed views of coordination.k8s.io/v1: Lease (node heartbeats, leader election).

Upstream: k8s.io/api/coordination/v1/types.go. Every spec field is a pointer and reads as None when absent.
"""

from __future__ import annotations

from control.api.typed.base import View, nested, optional_int, optional_string
from control.api.typed.meta import TypedObject


class LeaseSpec(View):
    __slots__ = ()
    holder_identity = optional_string("holderIdentity")
    lease_duration_seconds = optional_int("leaseDurationSeconds")
    acquire_time = optional_string("acquireTime")
    renew_time = optional_string("renewTime")
    lease_transitions = optional_int("leaseTransitions")


class Lease(TypedObject):
    __slots__ = ()
    spec = nested("spec", LeaseSpec)
