"""The EndpointSlice mirroring controller (upstream pkg/controller/endpointslicemirroring)."""
