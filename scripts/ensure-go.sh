#!/usr/bin/env bash
# Prints the path of a Go toolchain's `go` for the benches' Go peer (bench/peers/authorize-go/); no test
# uses it. Order: $SVC_GO_BIN, `go` on the PATH, /usr/lib/go/bin/go; when none is there and we are root on
# Debian, installs the distribution's golang-go package (Debian 12: Go 1.19). Quiet when Go is present.
set -euo pipefail
source "$(dirname "$0")/apt-ensure.sh"

found() {
  if [[ -n "${SVC_GO_BIN:-}" ]]; then
    [[ -x "$SVC_GO_BIN" ]] && echo "$SVC_GO_BIN"
    return
  fi
  command -v go 2>/dev/null || { [[ -x /usr/lib/go/bin/go ]] && echo /usr/lib/go/bin/go; }
}

if bin=$(found); then
  echo "$bin"
  exit 0
fi
if [[ -n "${SVC_GO_BIN:-}" ]]; then
  echo "SVC_GO_BIN=$SVC_GO_BIN is not an executable" >&2
  exit 1
fi
apt_ensure go 'install Go (Debian/Ubuntu: apt-get install golang-go), or set SVC_GO_BIN' \
  "installing Debian's golang-go" golang-go
