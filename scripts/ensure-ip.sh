#!/usr/bin/env bash
# Prints the path of iproute2's `ip` (network namespaces for the partition test); when it is missing
# and we are root on Debian, installs the distribution's iproute2 package.
set -euo pipefail
source "$(dirname "$0")/apt-ensure.sh"

found() {
  command -v ip 2>/dev/null || { [[ -x /usr/sbin/ip ]] && echo /usr/sbin/ip; } || { [[ -x /sbin/ip ]] && echo /sbin/ip; }
}

if bin=$(found); then
  echo "$bin"
  exit 0
fi
apt_ensure ip 'install iproute2 (Debian/Ubuntu: apt-get install iproute2)' "installing Debian's iproute2" iproute2
