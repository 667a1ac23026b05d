#!/usr/bin/env bash
# Prints the path of curl for the HTTPS tests (test/integration/listeners.test.ts); when it is
# missing and we are root on Debian, installs the distribution's curl package first.
set -euo pipefail
source "$(dirname "$0")/apt-ensure.sh"

found() {
  command -v curl
}

if bin=$(found); then
  echo "$bin"
  exit 0
fi
apt_ensure curl 'install it (Debian/Ubuntu: apt-get install curl)' "installing Debian's curl package" curl
