"""Typed views of discovery.k8s.io/v1: EndpointSlice and its endpoints and ports.

Upstream: k8s.io/api/discovery/v1/types.go. An EndpointSlice has no spec: `addressType`, `endpoints` and
`ports` sit beside `metadata`. Most of its fields are pointers, so they read as None when absent; the
conditions as upstream's consumers (kube-proxy's endpointslicecache.go) read them: a nil `ready` or
`serving` means true, a nil `terminating` false (`EndpointConditions.is_ready` / `is_serving` /
`is_terminating`).
"""

from __future__ import annotations

from control.api.typed.base import (
    View,
    mapping,
    nested,
    nested_list,
    optional_bool,
    optional_int,
    optional_mapping,
    optional_string,
    pointer,
    string,
    string_list,
)
from control.api.typed.core import ObjectReference
from control.api.typed.meta import TypedObject


class EndpointConditions(View):
    __slots__ = ()
    ready = optional_bool("ready")
    serving = optional_bool("serving")
    terminating = optional_bool("terminating")

    @property
    def is_ready(self) -> bool:
        return self.ready is not False

    @property
    def is_serving(self) -> bool:
        return self.serving is not False

    @property
    def is_terminating(self) -> bool:
        return self.terminating is True


class Endpoint(View):
    __slots__ = ()
    addresses = string_list("addresses")
    conditions = nested("conditions", EndpointConditions)
    hostname = optional_string("hostname")
    target_ref = pointer("targetRef", ObjectReference)
    node_name = optional_string("nodeName")
    zone = optional_string("zone")
    hints = optional_mapping("hints")
    deprecated_topology = mapping("deprecatedTopology")


class EndpointPort(View):
    __slots__ = ()
    name = optional_string("name")
    protocol = optional_string("protocol")
    port = optional_int("port")
    app_protocol = optional_string("appProtocol")


class EndpointSlice(TypedObject):
    __slots__ = ()
    address_type = string("addressType")
    endpoints = nested_list("endpoints", Endpoint)
    ports = nested_list("ports", EndpointPort)
