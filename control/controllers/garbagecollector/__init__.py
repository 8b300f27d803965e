"""The garbage collector (upstream pkg/controller/garbagecollector)."""
