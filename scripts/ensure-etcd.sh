#!/usr/bin/env bash
# Prints the path of an etcd binary (3.4 or later) for the tests and the local demo. Order: $SVC_ETCD_BIN,
# `etcd` on the PATH, /usr/bin/etcd; when none is there and we are root on Debian, installs the
# distribution's etcd-server package (Debian 12: etcd 3.4.23). Quiet when etcd is already present.
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
  echo "$bin"
  exit 0
fi
if [[ -n "${SVC_ETCD_BIN:-}" ]]; then
  echo "SVC_ETCD_BIN=$SVC_ETCD_BIN is not an executable" >&2
  exit 1
fi
apt_ensure etcd 'install etcd 3.4+ (Debian/Ubuntu: apt-get install etcd-server), or set SVC_ETCD_BIN' \
  "installing Debian's etcd-server (and etcd-client, whose etcdctl the RBAC test uses)" etcd-server etcd-client
