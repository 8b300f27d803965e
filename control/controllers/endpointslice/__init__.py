"""The EndpointSlice controller (upstream pkg/controller/endpointslice)."""
