#!/usr/bin/env bash
# Install what slimkube needs on a Debian 12 host (root), idempotently: Debian packages, a running dockerd,
# Debian's kubectl 1.20 beside the machine's own kubectl, a virtualenv with slimkube, and the two images.
# Used by the README, by .ci/run and by the Vagrant provisioning. Safe to run again at any time.
#
#   ./install.sh            everything
#   SLIMKUBE_VENV=DIR       virtualenv location (default: .venv next to this script)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
venv=${SLIMKUBE_VENV:-$here/.venv}
kubectl120_dir=/opt/slimkube/kubectl-1.20
log() { printf '[install] %s\n' "$*"; }

[ "$(id -u)" = 0 ] || { echo "install.sh must run as root (it installs packages and starts dockerd)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive

# 1. Debian packages. policy-rc.d (exit 101) keeps apt from starting docker through an init script that
#    cannot work without systemd; we start dockerd ourselves below.
packages=(docker.io iptables conntrack busybox-static etcd-server gcc libc6-dev iproute2 python3-venv ca-certificates openssl)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 2. iptables backend. Legacy restores a 32k-rule table ~15x faster than nft (shared/RECIPES.md), but the
#    switch is only safe before dockerd first writes rules and while nft holds no rules at all: rules
#    outlive their writers, and a DROP left in one backend drops what the other accepts. So decide from
#    what the kernel holds now, and never switch under a running dockerd.
rules_in() { "$1" 2>/dev/null | grep -cE '^(-A|:[A-Z])' || true; }
current=$(readlink -f "$(command -v iptables)")
if ! pgrep -x dockerd >/dev/null && [ "$(rules_in iptables-nft-save)" = 0 ] && [ "$(rules_in ip6tables-nft-save)" = 0 ]; then
  if [ "$current" != /usr/sbin/xtables-legacy-multi ]; then
    log "iptables: nft backend is empty and dockerd is not running; choosing the legacy backend"
    update-alternatives --set iptables /usr/sbin/iptables-legacy >/dev/null
    update-alternatives --set ip6tables /usr/sbin/ip6tables-legacy >/dev/null
  fi
else
  log "iptables: keeping $(iptables --version) (rules are loaded or dockerd runs)"
fi

# 3. dockerd. There is no systemd as PID 1 on these machines; on a host with systemd, use its unit.
if ! docker info >/dev/null 2>&1; then
  if [ -d /run/systemd/system ]; then
    log "starting docker.service"
    systemctl enable --now docker.service
  else
    log "starting dockerd (detached; log in /var/log/dockerd.log)"
    setsid /usr/sbin/dockerd --data-root /var/lib/docker >>/var/log/dockerd.log 2>&1 </dev/null &
  fi
  for _ in $(seq 1 120); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not come up; see /var/log/dockerd.log" >&2; exit 1; }
fi

# 4. kubectl 1.20 from Debian, unpacked beside the machine's own /usr/bin/kubectl (which it would conflict with).
if [ ! -x "$kubectl120_dir/usr/bin/kubectl" ]; then
  log "unpacking Debian's kubectl 1.20 into $kubectl120_dir"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq kubernetes-client >/dev/null 2>&1) || { apt-get update -qq; (cd "$tmp" && apt-get download -qq kubernetes-client); }
  mkdir -p "$kubectl120_dir"
  dpkg -x "$tmp"/kubernetes-client_*.deb "$kubectl120_dir"
  rm -rf "$tmp"
fi

# 5. The virtualenv with slimkube and its test tools.
if [ ! -x "$venv/bin/python" ]; then
  log "creating virtualenv $venv"
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
log "installing slimkube into $venv"
"$venv/bin/python" -m pip install -q -e "$here[test]"

# 6. The images pods use without a registry: slimkube/pause and slimkube/busybox:1.
"$venv/bin/slimkube" images

log "done: $("$venv/bin/slimkube" version)"
