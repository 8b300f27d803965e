"""Exit non-zero if tests left anything on this host: pod or test containers, KUBE-* and CNI-* chains
(the portmap plugin's, from CNI-mode tests), CNI attachments in libcni's default store, test namespaces
or links. `.ci/run` calls it after the suite, so a test that leaks fails CI.

Node namespaces of `up --nodes` are named after their nodes (`sktest-…` in tests, so the namespace check
finds them); their host veths and the node bridge are `slimnode*` links, counted under CI (strict) like
every pod container, since a developer's own `up --nodes` makes them too.

    python -m tests.support.leftovers
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from slimkube.nodes import HOST_VETH_PREFIX
from tests.support.substrate import TEST_LABEL, TEST_PREFIX, list_test_netns

# libcni's cache and host-local's default store; the kubelet's CNI mode keeps both under its state dir,
# so anything here came from a configuration that names them (tests use their own tmp dirs)
CNI_STORES = Path("/var/lib/cni")


def leftovers(*, strict: bool = True) -> list[str]:
    """What tests left. `strict` also counts every pod container and KUBE-* chain, whoever made them."""
    found = []
    for label in (TEST_LABEL, "io.kubernetes.pod.uid") if strict else (TEST_LABEL,):
        ps = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={label}"], capture_output=True, text=True)
        if ps.returncode != 0:
            if strict:
                found.append(f"(cannot list containers: {ps.stderr.strip()})")
            break
        found += [f"container {i} (label {label})" for i in ps.stdout.split()]
    if strict:
        saved = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
        found += [f"iptables chain {line[1:].split()[0]}" for line in saved.splitlines()
                  if line.startswith((":KUBE-", ":CNI-"))]
        stored = [*CNI_STORES.glob("results/*"), *CNI_STORES.glob("networks/*/*")]
        found += [f"CNI cache record or address {path}" for path in sorted(stored)
                  if not path.name.startswith(("lock", "last_reserved_ip"))]
    found += [f"network namespace {name}" for name in list_test_netns()]
    links = json.loads(subprocess.run(["ip", "-j", "link"], capture_output=True, text=True, check=True).stdout)
    prefixes = ("sk", TEST_PREFIX, HOST_VETH_PREFIX) if strict else ("sk", TEST_PREFIX)
    found += [f"link {link['ifname']}" for link in links if link["ifname"].startswith(prefixes)]
    return found


def main() -> int:
    found = leftovers()
    for item in found:
        print(f"left behind: {item}")
    print("no leftovers" if not found else f"{len(found)} leftovers")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
