"""EndpointSlices (upstream pkg/registry/discovery/endpointslice/strategy.go).

What differs from a plain kind: `metadata.generation` starts at 1 and grows with every change to the
object outside its metadata (upstream PrepareForUpdate compares the whole slice; the EndpointSlice
controller's tracker reads generations to tell its own writes from stale cache entries). No create on
update (AllowCreateOnUpdate false), no status. Defaults and validation live in control.api
(defaults.py, validation/discovery.py).
"""

from __future__ import annotations

from control.apiserver.registry.strategies.base import Strategy


class EndpointSliceStrategy(Strategy):
    tracks_generation = True
