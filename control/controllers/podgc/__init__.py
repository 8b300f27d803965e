"""The pod garbage collector (upstream pkg/controller/podgc)."""
