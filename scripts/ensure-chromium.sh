#!/usr/bin/env bash
# Prints the path of a Chromium for the report test (test/integration/loadtest-report.test.ts), which
# drives it with playwright-core (never a browser download). Order: $SVC_CHROMIUM_BIN, `chromium` on
# the PATH, /usr/bin/chromium; when none is there and we are root on Debian, installs the
# distribution's chromium package first.
set -euo pipefail

found() {
  if [[ -n "${SVC_CHROMIUM_BIN:-}" ]]; then
    [[ -x "$SVC_CHROMIUM_BIN" ]] && echo "$SVC_CHROMIUM_BIN"
    return
  fi
  command -v chromium 2>/dev/null || { [[ -x /usr/bin/chromium ]] && echo /usr/bin/chromium; }
}

if bin=$(found); then
  echo "$bin"
  exit 0
fi
if [[ -n "${SVC_CHROMIUM_BIN:-}" ]]; then
  echo "SVC_CHROMIUM_BIN=$SVC_CHROMIUM_BIN is not an executable" >&2
  exit 1
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
  echo "chromium not found: install it (Debian: apt-get install chromium), or set SVC_CHROMIUM_BIN" >&2
  exit 1
fi
exec 9>"${TMPDIR:-/tmp}/svc-agent-ensure-chromium.lock"
flock 9
if ! bin=$(found); then
  echo "chromium not found: installing Debian's chromium package" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q chromium >&2 || { apt-get update -q >&2 && apt-get install -y -q chromium >&2; }
  bin=$(found) || { echo "chromium was installed but no binary was found" >&2; exit 1; }
fi
echo "$bin"
