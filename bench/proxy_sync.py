"""kube-proxy sync cost against a bare iptables-restore of the same rules (1,000 services × 10
endpoints, full sync time beside a bare `iptables-restore` of the same text in the same run (goal ≤ 1.5×),
and the time to apply one endpoint change (goal ≤ 100 ms on the legacy backend; report nft too), each in a
throwaway network namespace so the host's tables are untouched).

Run (root): `.venv/bin/python bench/proxy_sync.py [--services 1000] [--endpoints 10] [--backend all]`.

Per backend installed (legacy, nft), with the real `proxy.render.render` and the real
`<backend>-restore --noflush -w` (control.util.iptables.Iptables, run through `ip netns exec`):
1. render alone: the first call (chain names hashed) and the median of later ones (names memoised).
2. first load into empty tables: a full sync (render + restore) in a fresh namespace beside a bare restore
   of the already-rendered text in another fresh namespace, alternately, `--repeat` times.
3. steady state (the periodic full resync): in one loaded namespace, a full sync (render with `existing` +
   restore) beside a bare restore of the same text, alternately, `--repeat` times.
4. one endpoint change: service 0's first endpoint swapped between two addresses, a partial sync
   (render with `changed={that port}` + restore, stale SEP chain deleted with `-X`) `--changes` times,
   each followed by a bare restore of the same partial text (the floor: a `--noflush` restore rewrites
   the whole table in the kernel however short its input, so its time grows with the rules loaded).
   The proxier does not run `iptables-save` per partial sync (it knows which chains it wrote), so neither
   does this; for reference, a bare restore of a one-rule text into the same tables (the cost of any
   restore at this table size) and one `-save -t nat`.
Namespaces are named `skbench-<run>-…` and deleted at the end, even on failure. The xtables lock is
machine-wide: iptables commands of other programs (other test runs) can delay a restore here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from control.util.iptables import Iptables, Mode, Result, run_command  # noqa: E402
from proxy.model import EndpointInfo, NodeConfig, ProxyState, ServicePortInfo, ServicePortName  # noqa: E402
from proxy.render import render  # noqa: E402

NODE = NodeConfig("skbench-node", node_ips=("192.168.77.10",), cluster_cidr="10.244.0.0/16")


def build_state(services: int, endpoints: int) -> ProxyState:
    """ClusterIP services (every 10th a NodePort, every 7th with ClientIP affinity), `endpoints` each."""
    svcs: dict[ServicePortName, ServicePortInfo] = {}
    eps: dict[ServicePortName, list[EndpointInfo]] = {}
    for i in range(services):
        name = ServicePortName("bench", f"svc{i}", "http", "TCP")
        svcs[name] = ServicePortInfo(name=name, cluster_ip=f"10.96.{i // 250}.{i % 250 + 1}", port=80,
                                     protocol="TCP", node_port=30000 + i if i % 10 == 0 else 0,
                                     session_affinity_seconds=10800 if i % 7 == 0 else 0)
        eps[name] = [EndpointInfo(f"10.{100 + i // 250}.{i % 250}.{j + 1}", 8080) for j in range(endpoints)]
    return ProxyState(svcs, eps)


def in_netns(ns: str) -> Callable[..., Result]:
    def run(argv: Sequence[str], *, stdin: str | None = None) -> Result:
        return run_command(["ip", "netns", "exec", ns, *argv], stdin=stdin)
    return run


class Namespaces:
    """Throwaway namespaces of this run; `close` deletes every one still there."""

    def __init__(self, run: str) -> None:
        self.run, self.made, self.count = run, [], 0

    def make(self, label: str) -> str:
        self.count += 1
        name = f"skbench-{self.run}-{label}{self.count}"
        subprocess.run(["ip", "netns", "add", name], check=True)
        self.made.append(name)
        return name

    def delete(self, name: str) -> None:
        subprocess.run(["ip", "netns", "del", name], check=False)
        self.made.remove(name)

    def close(self) -> None:
        for name in list(self.made):
            self.delete(name)


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def bare_restore(mode: Mode, ns: str, text: str) -> None:
    done = subprocess.run(["ip", "netns", "exec", ns, f"iptables-{mode.value}-restore", "--noflush", "-w"],
                          input=text, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"bare restore failed: {done.stderr.strip()}")


def bench_backend(mode: Mode, st: ProxyState, spaces: Namespaces, repeat: int, changes: int) -> dict[str, object]:
    text = render(st, NODE).text
    first_full, first_bare = [], []
    for _ in range(repeat):
        ns = spaces.make(mode.value[:3] + "b")
        first_bare.append(timed(lambda ns=ns: bare_restore(mode, ns, text)))
        spaces.delete(ns)
        ns = spaces.make(mode.value[:3] + "f")
        ipt = Iptables(mode, in_netns(ns))
        first_full.append(timed(lambda ipt=ipt: ipt.restore(render(st, NODE).text)))
        spaces.delete(ns)

    ns = spaces.make(mode.value[:3] + "s")
    ipt = Iptables(mode, in_netns(ns))
    ipt.restore(text)
    chains = render(st, NODE).chains
    steady_full, steady_bare = [], []
    for _ in range(repeat):
        steady_bare.append(timed(lambda: bare_restore(mode, ns, text)))
        steady_full.append(timed(lambda: ipt.restore(render(st, NODE, existing=chains).text)))

    target = min(st.services)
    original = list(st.endpoints[target])
    swapped = [replace(original[0], ip="10.250.0.1"), *original[1:]]
    partial, partial_render, partial_bare = [], [], []
    current = st
    for i in range(changes):
        backends = swapped if i % 2 == 0 else original
        current = replace(current, endpoints={**current.endpoints, target: backends})
        start = time.perf_counter()
        rendered = render(current, NODE, existing=chains, changed=frozenset({target}))
        rendered_at = time.perf_counter()
        ipt.restore(rendered.text)
        partial.append(time.perf_counter() - start)
        partial_render.append(rendered_at - start)
        chains = rendered.chains
        # The same text again, bare: the stale SEP chain is declared (re-created) and deleted again.
        partial_bare.append(timed(lambda text=rendered.text: bare_restore(mode, ns, text)))
    mark = hex(1 << NODE.masquerade_bit)
    tiny = f"*nat\n:KUBE-MARK-MASQ - [0:0]\n-A KUBE-MARK-MASQ -j MARK --or-mark {mark}\nCOMMIT\n"
    one_rule = statistics.median(timed(lambda: bare_restore(mode, ns, tiny)) for _ in range(3))
    save = timed(lambda: ipt.save("nat"))
    rules = sum(1 for line in ipt.save("nat").splitlines() if line.startswith("-A KUBE-"))
    spaces.delete(ns)
    return {"first_full": first_full, "first_bare": first_bare, "steady_full": steady_full,
            "steady_bare": steady_bare, "partial": partial, "partial_render": partial_render,
            "partial_bare": partial_bare, "one_rule": one_rule, "save": save, "rules": rules}


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--endpoints", type=int, default=10)
    parser.add_argument("--backend", choices=["legacy", "nft", "all"], default="all")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--changes", type=int, default=7)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("proxy_sync.py needs root (network namespaces, iptables)", file=sys.stderr)
        return 1
    modes = [m for m in Mode if args.backend in ("all", m.value)]
    modes = [m for m in modes if subprocess.run(["sh", "-c", f"command -v iptables-{m.value}-restore"],
                                                capture_output=True).returncode == 0]
    st = build_state(args.services, args.endpoints)
    cold = timed(lambda: render(st, NODE))  # chain names not yet memoised: what a proxy's first sync pays
    renders = [timed(lambda: render(st, NODE)) for _ in range(max(3, args.repeat))]
    rendered = render(st, NODE)
    print(f"{args.services} services x {args.endpoints} endpoints: {rendered.rule_counts['nat']} nat rules, "
          f"{len(rendered.chains['nat'])} nat chains, {len(rendered.text) / 1e6:.1f} MB; render: first "
          f"{cold * 1000:.0f} ms, then median {ms(renders)} ms; load average {os.getloadavg()[0]:.1f}")
    spaces = Namespaces(uuid.uuid4().hex[:6])
    try:
        print("| backend | measurement | slimkube ms | bare restore ms | ratio |")
        print("|---|---|---:|---:|---:|")
        for mode in modes:
            r = bench_backend(mode, st, spaces, args.repeat, args.changes)
            for label, full, bare in (("first load (empty tables)", r["first_full"], r["first_bare"]),
                                      ("full resync (loaded tables)", r["steady_full"], r["steady_bare"])):
                ratio = statistics.median(full) / statistics.median(bare)
                print(f"| {mode.value} | {label}: render + restore | {ms(full)} | {ms(bare)} | {ratio:.2f} |")
            ratio = statistics.median(r["partial"]) / statistics.median(r["partial_bare"])
            print(f"| {mode.value} | one endpoint change: partial render ({ms(r['partial_render'])} ms) + restore, "
                  f"median of {args.changes} (max {max(r['partial']) * 1000:.0f}) | {ms(r['partial'])} | "
                  f"{ms(r['partial_bare'])} | {ratio:.2f} |")
            print(f"| {mode.value} | for reference: bare restore of a one-rule text into these tables | | "
                  f"{r['one_rule'] * 1000:.0f} | |")
            print(f"| {mode.value} | for reference: one `-save -t nat` ({r['rules']} KUBE rules) | "
                  f"{r['save'] * 1000:.0f} | | |")
        print(f"goals: full sync <= 1.5x bare restore; one endpoint change <= 100 ms on legacy; "
              f"load average now {os.getloadavg()[0]:.1f}")
    finally:
        spaces.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
