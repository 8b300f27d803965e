"""The iptables Proxier: informer events in, one atomic `iptables-restore` per sync out.

Follows upstream pkg/proxy/iptables/proxier.go (v1.28-1.30 `syncProxyRules` around the rendering, which is
proxy/render.py here), step by step:

1. Nothing is written before both informers have synced (`set_initialized`, upstream isInitialized): a
   sync on half the services would delete the other half's chains.
2. Each sync takes the change trackers' pending changes (proxy/trackers.py) and decides full or partial
   (KEP-3453 MinimizeIPTablesRestore): full on the first sync, when `sync_period` has passed since the last
   full one, and after any failure (the pending changes were already consumed, so only a full sync is
   sure to be right); otherwise only the changed service ports' chains are rewritten.
3. A full sync reads the KUBE-* chains the kernel holds (proxy/tables.py) so the renderer can delete stale
   ones and write missing ones; a partial sync trusts what the last successful restore left (the renderer's
   `chains`), as upstream skips `iptables-save` between periodic cleanups in large clusters — reading 11k
   chains costs ~100 ms, the whole budget of a one-endpoint change. If a chain vanished behind our back,
   the partial restore fails and the full sync that follows reads the kernel.
4. On a full sync the jumps from built-in chains (render.jump_rules) are ensured *outside* the
   `--noflush` restore (inside it they would be appended again on every load): with `-C`/`-I`, or on a
   legacy node through python-iptables, one table read for all (proxy/jumps.py); their target chains
   are declared first when missing — only the missing ones, as declaring a chain in a restore flushes it.
   Upstream likewise ensures them only when not trying a partial sync.
5. One `iptables-restore --noflush -w` for filter and nat. `-w` waits for the xtables lock; any failure
   (lock timeout included) is counted and logged, never raised out of the loop: a failed partial restore
   is followed at once by a full one, a failed full one is retried after `sync_period` (upstream's
   RetryAfter(syncPeriod)) or sooner if a change arrives.
6. After the rules are in: stale UDP conntrack entries are deleted (proxy/conntrack.py), metrics and the
   health timestamps updated.

Health is upstream's proxier health (pkg/proxy/healthcheck/proxier_health.go): healthy unless a change
was queued and has not been synced for `2 × sync_period` (cmd/kube-proxy/app/server.go passes
2*SyncPeriod as the healthTimeout). Before initialisation, and with nothing queued, the proxy is healthy.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from control.util.iptables import Iptables, IptablesError
from proxy import render as renderer
from proxy.conntrack import Conntrack, ConntrackClient, delete_all, flows_to_delete
from proxy.jumps import JumpEnsurer
from proxy.jumps import choose as choose_jump_ensurer
from proxy.metrics import ProxyMetrics
from proxy.model import EndpointInfo, NodeConfig, ProxyState, ServicePortInfo, ServicePortName
from proxy.runner import BoundedFrequencyRunner
from proxy.tables import TABLES, existing_chains
from proxy.trackers import EndpointSliceChangeTracker, EndpointsUpdate, ServiceChangeTracker

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
# The runner times its periodic run from when the last run *began*, a moment before that sync read the clock
# and stamped its full sync; without slack the periodic run could fall short by that moment and be partial.
FULL_SYNC_SLACK = 0.5  # seconds


def _default_conntrack(iptables: Iptables) -> ConntrackClient | None:
    if shutil.which("conntrack") is None:
        log.warning("conntrack is not installed: stale UDP entries will not be removed")
        return None
    return Conntrack(run=iptables.run)


def _no_local_endpoints(services: Mapping[ServicePortName, ServicePortInfo],
                        endpoints: Mapping[ServicePortName, tuple[EndpointInfo, ...]]) -> dict[str, int]:
    """Service ports with a Local traffic policy and no ready local endpoint, per policy (upstream metric)."""
    counts = {"internal": 0, "external": 0}
    for name, info in services.items():
        if any(ep.ready and ep.is_local for ep in endpoints.get(name, ())):
            continue
        counts["internal"] += info.internal_policy_local
        counts["external"] += info.external_policy_local
    return counts


class Proxier:
    def __init__(self, *, node: NodeConfig, iptables: Iptables, metrics: ProxyMetrics,
                 min_sync_period: float = 1.0, sync_period: float = 30.0,
                 conntrack: ConntrackClient | None = None, clock: Callable[[], float] = time.monotonic,
                 jumps: JumpEnsurer | None = None) -> None:
        self.node = node
        self.iptables = iptables
        self.jumps = jumps if jumps is not None else choose_jump_ensurer(iptables)
        self.metrics = metrics
        self.sync_period = sync_period
        self.conntrack = conntrack if conntrack is not None else _default_conntrack(iptables)
        self._clock = clock
        self._service_changes = ServiceChangeTracker()
        self._endpoint_changes = EndpointSliceChangeTracker(node_name=node.node_name)
        self._runner = BoundedFrequencyRunner(self.sync, min_interval=min_sync_period, max_interval=sync_period,
                                              name="proxy sync")
        self._sync_lock = threading.Lock()   # one sync at a time (loop, tests, bench)
        self._state_lock = threading.Lock()  # the fields below that handlers and healthy() read
        self._initialized = False
        self._oldest_pending: float | None = None  # first change queued since the last successful sync
        self._last_synced: float | None = None
        self.synced = threading.Event()  # set by the first successful sync: the proxy is ready (sd_notify)
        # Only the sync (under _sync_lock) touches these: what the last sync applied, and when it was full.
        self._services: dict[ServicePortName, ServicePortInfo] = {}
        self._endpoints: dict[ServicePortName, tuple[EndpointInfo, ...]] = {}
        self._need_full = True
        self._last_full: float | None = None
        self._known_chains: Mapping[str, frozenset[str]] = {}  # KUBE-* chains the last successful restore left

    # Informer handlers (control/client/informer.py callbacks).
    def on_service_add(self, obj: Obj) -> None:
        self._service_event(None, obj)

    def on_service_update(self, old: Obj, new: Obj) -> None:
        self._service_event(old, new)

    def on_service_delete(self, obj: Obj) -> None:
        self._service_event(obj, None)

    def on_endpoint_slice_add(self, obj: Obj) -> None:
        self._endpoints_event(None, obj)

    def on_endpoint_slice_update(self, old: Obj, new: Obj) -> None:
        self._endpoints_event(old, new)

    def on_endpoint_slice_delete(self, obj: Obj) -> None:
        self._endpoints_event(obj, None)

    def _service_event(self, old: Obj | None, new: Obj | None) -> None:
        self.metrics.service_changes.inc()
        if self._service_changes.update(old, new):
            self._queued()

    def _endpoints_event(self, old: Obj | None, new: Obj | None) -> None:
        self.metrics.endpoint_changes.inc()
        if self._endpoint_changes.update(old, new):
            self._queued()

    def _queued(self) -> None:
        """A change waits for a sync (upstream Proxier.Sync: QueuedUpdate, the queued timestamp, Run)."""
        with self._state_lock:
            if not self._initialized:
                return
            if self._oldest_pending is None:
                self._oldest_pending = self._clock()
        self.metrics.last_queued_timestamp.set_to_current_time()
        self._runner.request()

    def set_initialized(self) -> None:
        """Both informers have synced: the first sync may run."""
        with self._state_lock:
            self._initialized = True
        self._runner.request()

    def healthy(self) -> tuple[bool, str]:
        timeout = 2 * self.sync_period
        with self._state_lock:
            pending, synced = self._oldest_pending, self._last_synced
        now = self._clock()
        if pending is None or now - pending < timeout:
            since = "never synced" if synced is None else f"last synced {now - synced:.1f}s ago"
            return True, f"ok ({since})"
        return False, f"a change queued {now - pending:.1f}s ago is not synced (timeout {timeout:g}s)"

    def run(self, stop: threading.Event) -> None:
        """The sync loop until `stop` is set: at most every min_sync_period, at least every sync_period."""
        def stop_runner_when_told() -> None:
            stop.wait()
            self._runner.stop()

        watcher = threading.Thread(target=stop_runner_when_told, name="proxy-stop", daemon=True)
        watcher.start()
        self._runner.loop()

    def sync(self) -> None:
        """One syncProxyRules (see the module docstring); never raises for iptables or conntrack failures."""
        with self._state_lock:
            if not self._initialized:
                return
        with self._sync_lock:
            self._sync()

    def _sync(self) -> None:
        start = time.perf_counter()
        now = self._clock()
        old_services = self._services
        services = self._service_changes.apply(self._services)
        endpoints = self._endpoint_changes.apply(self._endpoints)
        self._services, self._endpoints = services.services, endpoints.endpoints
        full = (self._need_full or self._last_full is None
                or now - self._last_full >= self.sync_period - FULL_SYNC_SLACK)
        state = ProxyState(self._services, self._endpoints)
        changed = services.changed | endpoints.changed
        # Set before writing: a failure at any step leaves it set, so the next sync is a full one.
        self._need_full = True
        ok = self._apply(state, None if full else changed)
        if not ok and not full:
            self.metrics.partial_restore_failures.inc()
            log.warning("partial sync failed; trying a full sync now")
            full, ok = True, self._apply(state, None)
        if not ok:
            self._runner.retry_after(self.sync_period)
            return
        self._need_full = False
        if full:
            self._last_full = now
        self._clean_conntrack(services.services, old_services, endpoints)
        elapsed = time.perf_counter() - start
        self.metrics.sync_duration.observe(elapsed)
        (self.metrics.full_sync_duration if full else self.metrics.partial_sync_duration).observe(elapsed)
        self.metrics.last_sync_timestamp.set_to_current_time()
        for policy, count in _no_local_endpoints(self._services, self._endpoints).items():
            self.metrics.no_endpoint_services.labels(traffic_policy=policy).set(count)
        with self._state_lock:
            self._oldest_pending, self._last_synced = None, self._clock()
        self.synced.set()

    def _apply(self, state: ProxyState, changed: frozenset[ServicePortName] | None) -> bool:
        """Write the rules (full when `changed` is None); False (logged and counted) if iptables failed."""
        try:
            existing = existing_chains(self.iptables) if changed is None else self._known_chains
            if changed is None:
                self._ensure_jumps(existing)
            rendered = renderer.render(state, self.node, existing=existing, changed=changed)
            self.iptables.restore(rendered.text)
            self._known_chains = rendered.chains
        except IptablesError as exc:
            self.metrics.restore_failures.inc()
            log.error("%s sync failed: %s", "full" if changed is None else "partial", exc)
            return False
        if changed is None:  # a partial sync writes a subset: its counts are not the tables' totals
            for table, count in rendered.rule_counts.items():
                self.metrics.iptables_total.labels(table=table).set(count)
        return True

    def _ensure_jumps(self, existing: Mapping[str, frozenset[str]]) -> None:
        jumps = renderer.jump_rules(self.node)
        missing = {table: sorted({j.rule[-1] for j in jumps if j.table == table} - existing.get(table, frozenset()))
                   for table in TABLES}
        if any(missing.values()):
            self.iptables.restore("".join(
                f"*{table}\n" + "".join(f":{chain} - [0:0]\n" for chain in chains) + "COMMIT\n"
                for table, chains in missing.items() if chains))
        self.jumps.ensure(jumps)

    def _clean_conntrack(self, services: Mapping[ServicePortName, ServicePortInfo],
                         old_services: Mapping[ServicePortName, ServicePortInfo],
                         endpoints: EndpointsUpdate) -> None:
        if self.conntrack is None:
            return
        flows = flows_to_delete(services=services, old_services=old_services,
                                stale_endpoints=endpoints.stale_endpoints, newly_active=endpoints.newly_active)
        if not flows:
            return
        deleted, errors = delete_all(self.conntrack, flows)
        for error in errors:
            self.metrics.conntrack_failures.inc()
            log.warning("conntrack cleanup: %s", error)
        log.debug("conntrack cleanup: %d filters, %d entries deleted", len(flows), deleted)
