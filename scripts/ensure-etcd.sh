#!/usr/bin/env bash
# Prints the path of an etcd binary (3.4 or later) for the tests and the local demo. Order: $SVC_ETCD_BIN,
# `etcd` on the PATH, /usr/bin/etcd; when none is there and we are root on Debian, installs the
# distribution's etcd-server package (Debian 12: etcd 3.4.23). Quiet when etcd is already present.
set -euo pipefail

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
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
  echo "etcd not found: install etcd 3.4+ (Debian/Ubuntu: apt-get install etcd-server), or set SVC_ETCD_BIN" >&2
  exit 1
fi

# Two test files may start etcd at once: one installs, the other waits and then finds it.
exec 9>"${TMPDIR:-/tmp}/svc-agent-ensure-etcd.lock"
flock 9
if bin=$(found); then
  echo "$bin"
  exit 0
fi
echo "etcd not found: installing Debian's etcd-server (and etcd-client, whose etcdctl the RBAC test uses)" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q etcd-server etcd-client >&2; then
  apt-get update -q >&2
  apt-get install -y -q etcd-server etcd-client >&2
fi
if bin=$(found); then
  echo "$bin"
  exit 0
fi
echo "etcd-server was installed but no etcd binary was found" >&2
exit 1
