#!/usr/bin/env bash
# Install what slimkube needs on a Debian 12 host (root), idempotently: Debian packages, a running dockerd,
# Debian's kubectl 1.20 beside the machine's own kubectl, Debian's docker-registry binary (for pull tests),
# a virtualenv with slimkube, and the three images.
# With --role, also the systemd units of that role, enabled and started where systemd runs (as k3s's
# installer does). Used by the README, by .ci/run and by the Vagrant provisioning. Safe to run again.
#
#   ./install.sh                                            everything above, no units
#   ./install.sh --role server [-- SERVER FLAGS]            + slimkube-server.service
#   ./install.sh --role agent --server URL --token-file FILE [-- AGENT FLAGS]
#                                                           + slimkube-agent.service, slimkube-proxy.service
#   --units-only      with --role: only the units and /etc/slimkube (the host is set up already)
#   SLIMKUBE_TOKEN    the join token, instead of --token-file (--token TOKEN works, deprecated: ps shows it)
#   SLIMKUBE_VENV=DIR virtualenv location (default: .venv next to this script)
#   SLIMKUBE_ETC_DIR, SLIMKUBE_UNIT_DIR, SLIMKUBE_BIN_DIR   where --role writes (default /etc/slimkube,
#                     /etc/systemd/system, /usr/local/bin); systemctl runs only with the defaults
#   CI=true           also installs Debian's vagrant (tests/unit/test_vagrantfile.py runs `vagrant validate`)
#
# Not root: it runs itself again through sudo when sudo exists (a fresh Debian 12 has no sudo; run as root);
# a join token given by value goes to that run in a temporary 0600 file, never on sudo's command line.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
venv=${SLIMKUBE_VENV:-$here/.venv}
kubectl120_dir=/opt/slimkube/kubectl-1.20
registry_dir=/opt/slimkube/docker-registry
log() { printf '[install] %s\n' "$*"; }
usage() { sed -n '8,13p' "$here/install.sh" | sed 's/^# \{0,1\}//' >&2; echo "install.sh: $*" >&2; exit 2; }

role='' server_url='' token='' token_file='' units_only=false daemon_args=()
original_args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --role) [ $# -ge 2 ] || usage "--role needs a value"; role=$2; shift 2 ;;
    --server) [ $# -ge 2 ] || usage "--server needs a value"; server_url=$2; shift 2 ;;
    --token) [ $# -ge 2 ] || usage "--token needs a value"; token=$2; shift 2
             log "warning: --token puts the join token on the command line, where any local user reads it (ps);" \
               "it is deprecated: use --token-file FILE or SLIMKUBE_TOKEN" ;;
    --token-file) [ $# -ge 2 ] || usage "--token-file needs a value"; token_file=$2; shift 2 ;;
    --units-only) units_only=true; shift ;;
    --) shift; daemon_args=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$here/install.sh" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage "unknown argument $1" ;;
  esac
done
[ -z "$token" ] || [ -z "$token_file" ] || usage "give --token-file or --token, not both"
[ "$role" != agent ] || [ -n "$token$token_file" ] || token=${SLIMKUBE_TOKEN:-}
case "$role" in
  '') { [ -z "$server_url$token$token_file" ] && ! $units_only && [ ${#daemon_args[@]} = 0 ]; } \
        || usage "--server, --token-file, --units-only and daemon flags go with --role" ;;
  server) [ -z "$server_url$token$token_file" ] || usage "--server and --token-file are for --role agent" ;;
  agent) [ -n "$server_url" ] && [ -n "$token$token_file" ] \
           || usage "--role agent needs --server URL and --token-file FILE (or SLIMKUBE_TOKEN)" ;;
  *) usage "--role is server or agent, not $role" ;;
esac
check_values() {  # they go into .env files as KEY="value"
  for value in "$@"; do
    case "$value" in *[\"\\\$\`\'[:space:]]*) usage "no quotes, backslashes, \$ or spaces in values: $value" ;; esac
  done
}
check_values "$server_url" "$token" "${daemon_args[@]}"

if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null; then
    log "not root: running again through sudo"
    if [ -z "$token" ]; then
      exec sudo SLIMKUBE_VENV="$venv" ${CI:+CI="$CI"} "$here/install.sh" "${original_args[@]}"
    fi
    # a token given by value (--token, SLIMKUBE_TOKEN, which sudo would drop) reaches root in a file
    secret=$(umask 077 && mktemp)
    trap 'rm -f "$secret"' EXIT
    printf '%s\n' "$token" >"$secret"
    rerun=(--role "$role" --server "$server_url" --token-file "$secret")
    if $units_only; then rerun+=(--units-only); fi
    if [ ${#daemon_args[@]} -gt 0 ]; then rerun+=(-- "${daemon_args[@]}"); fi
    sudo SLIMKUBE_VENV="$venv" ${CI:+CI="$CI"} "$here/install.sh" "${rerun[@]}"
    exit 0
  fi
  echo "install.sh must run as root (it installs packages and starts dockerd), and sudo is not installed" >&2
  exit 1
fi
if [ -n "$token_file" ]; then
  [ -r "$token_file" ] || usage "cannot read --token-file $token_file"
  token=$(tr -d '[:space:]' <"$token_file")
  [ -n "$token" ] || usage "--token-file $token_file is empty"
  check_values "$token"
fi
export DEBIAN_FRONTEND=noninteractive

setup_host() {
  # 1. Debian packages. policy-rc.d (exit 101) keeps apt from starting docker through an init script that
  #    cannot work without systemd; we start dockerd ourselves below.
  #    systemd brings systemd-analyze, which checks our unit files (tests/integration/test_systemd_units.py);
  #    under CI=true also Debian's vagrant, for `vagrant validate` (tests/unit/test_vagrantfile.py).
  #    containernetworking-plugins: the CNI plugins (/usr/lib/cni) of `agent --network-plugin cni`.
  packages=(docker.io iptables conntrack busybox-static etcd-server gcc libc6-dev iproute2 python3-venv ca-certificates openssl
            containernetworking-plugins
            systemd)
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if [ "${CI:-}" = true ] && ! command -v vagrant >/dev/null; then  # without vagrant-libvirt and its libvirt
    log "apt-get install --no-install-recommends vagrant (CI=true)"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends vagrant >/dev/null
  fi

  # 2. iptables backend. Legacy restores a 32k-rule table ~15x faster than nft (bench/RESULTS.md), but the
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

  # 4b. Debian's docker-registry, only its binary (tests/integration/test_image_pulls.py runs throwaway
  #     registries on 127.0.0.1 with their own configs): unpacked, not installed, so its service is never
  #     enabled or started and no system user is added.
  if [ ! -x "$registry_dir/docker-registry" ]; then
    log "unpacking Debian's docker-registry binary into $registry_dir"
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download -qq docker-registry >/dev/null 2>&1) || { apt-get update -qq; (cd "$tmp" && apt-get download -qq docker-registry); }
    dpkg -x "$tmp"/docker-registry_*.deb "$tmp/root"
    mkdir -p "$registry_dir"
    install -m 0755 "$tmp/root/usr/bin/docker-registry" "$registry_dir/docker-registry"
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

  # 6. The images pods use without a registry: slimkube/pause, slimkube/busybox:1 and slimkube/python:1.
  "$venv/bin/slimkube" images
}

# 7. With --role: the role's units into /etc/systemd/system, their settings into /etc/slimkube, and the
#    `slimkube` they start linked from /usr/local/bin; enabled and started only where systemd is PID 1.
install_role() {
  local etc_dir=${SLIMKUBE_ETC_DIR:-/etc/slimkube} unit_dir=${SLIMKUBE_UNIT_DIR:-/etc/systemd/system}
  local bin_dir=${SLIMKUBE_BIN_DIR:-/usr/local/bin} units=() args="${daemon_args[*]}"
  [ -x "$venv/bin/slimkube" ] || { echo "no $venv/bin/slimkube: run ./install.sh without --units-only first" >&2; exit 1; }
  mkdir -p "$etc_dir" "$unit_dir" "$bin_dir"
  ln -sfn "$venv/bin/slimkube" "$bin_dir/slimkube"
  if [ "$role" = server ]; then
    units=(slimkube-server.service)
    write_env "$etc_dir/server.env" "SLIMKUBE_SERVER_ARGS=\"$args\""
  else
    units=(slimkube-agent.service slimkube-proxy.service)
    write_env "$etc_dir/agent.env" "SLIMKUBE_SERVER_URL=\"$server_url\"" "SLIMKUBE_TOKEN=\"$token\"" \
      "SLIMKUBE_AGENT_ARGS=\"$args\""
    write_env "$etc_dir/proxy.env" "SLIMKUBE_SERVER_URL=\"$server_url\"" "SLIMKUBE_TOKEN=\"$token\"" \
      "SLIMKUBE_PROXY_ARGS=\"\""
    write_config "$etc_dir/agent.yaml" kubelet.config.k8s.io/v1beta1 KubeletConfiguration
    write_config "$etc_dir/proxy.yaml" kubeproxy.config.k8s.io/v1alpha1 KubeProxyConfiguration
  fi
  for unit in "${units[@]}"; do
    log "writing $unit_dir/$unit"
    sed -e "s#/usr/local/bin/slimkube#$bin_dir/slimkube#g" -e "s#/etc/slimkube/#$etc_dir/#g" \
      "$here/systemd/$unit" >"$unit_dir/$unit.tmp"
    chmod 644 "$unit_dir/$unit.tmp" && mv "$unit_dir/$unit.tmp" "$unit_dir/$unit"
  done
  local enable="systemctl daemon-reload && systemctl enable --now ${units[*]}"
  if [ -d /run/systemd/system ] && [ -z "${SLIMKUBE_UNIT_DIR:-}" ]; then
    log "$enable"
    systemctl daemon-reload
    systemctl enable --now "${units[@]}"  # returns once each has sent READY=1 (Type=notify)
  else
    log "systemd is not PID 1 here (or SLIMKUBE_UNIT_DIR is set): not running: $enable"
  fi
}

# KEY="value" lines, readable by root only (the agent's hold the join token).
write_env() {
  local file=$1; shift
  log "writing $file"
  (umask 077 && printf '%s\n' "# written by install.sh --role $role; install.sh rewrites it" "$@" >"$file.tmp")
  mv "$file.tmp" "$file"
}

# A config file with only its kind, unless the operator has one already (theirs is kept).
write_config() {
  [ -e "$1" ] && { log "keeping $1"; return; }
  log "writing $1"
  printf 'apiVersion: %s\nkind: %s\n' "$2" "$3" >"$1"
}

$units_only || setup_host
[ -z "$role" ] || install_role
log "done: $("$venv/bin/slimkube" version)"
