#!/usr/bin/env bash
# Prints the path of a Chromium for the report test (test/integration/loadtest.test.ts), which
# drives it with playwright-core (never a browser download). Order: $SVC_CHROMIUM_BIN, `chromium` on
# the PATH, /usr/bin/chromium; when none is there and we are root on Debian, installs the
# distribution's chromium package first.
set -euo pipefail
source "$(dirname "$0")/apt-ensure.sh"

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
apt_ensure chromium 'install it (Debian: apt-get install chromium), or set SVC_CHROMIUM_BIN' "installing Debian's chromium package" chromium
