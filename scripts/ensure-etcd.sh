#!/usr/bin/env bash
# Prints the path of an etcd binary (3.4 or later) for the tests and the local demo. Order: $SVC_ETCD_BIN,
# `etcd` on the PATH, /usr/bin/etcd; when none is there and we are root on Debian, installs the
# distribution's etcd-server package (Debian 12: etcd 3.4.23), and etcd-client (etcdctl) where etcd is
# present without it. Quiet when both are already present.
set -euo pipefail
source "$(dirname "$0")/apt-ensure.sh"

found() {
  if [[ -n "${SVC_ETCD_BIN:-}" ]]; then
    [[ -x "$SVC_ETCD_BIN" ]] && echo "$SVC_ETCD_BIN"
    return
  fi
  command -v etcd 2>/dev/null || { [[ -x /usr/bin/etcd ]] && echo /usr/bin/etcd; }
}

if bin=$(found); then
  # etcd without its etcdctl (etcd-server alone): the RBAC and fault tests drive etcd with it.
  if [[ ! -x "$(dirname "$bin")/etcdctl" ]] && ! command -v etcdctl >/dev/null && [[ $(id -u) -eq 0 ]] &&
    command -v apt-get >/dev/null; then
    exec 9>"${TMPDIR:-/tmp}/svc-agent-ensure-etcdctl.lock"
    flock 9
    command -v etcdctl >/dev/null ||
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-client >&2 ||
      { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-client >&2; } ||
      echo "etcdctl not found, and Debian's etcd-client did not install" >&2
  fi
  echo "$bin"
  exit 0
fi
if [[ -n "${SVC_ETCD_BIN:-}" ]]; then
  echo "SVC_ETCD_BIN=$SVC_ETCD_BIN is not an executable" >&2
  exit 1
fi
apt_ensure etcd 'install etcd 3.4+ (Debian/Ubuntu: apt-get install etcd-server), or set SVC_ETCD_BIN' \
  "installing Debian's etcd-server (and etcd-client, whose etcdctl the RBAC test uses)" etcd-server etcd-client
