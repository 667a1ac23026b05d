#!/usr/bin/env bash
# Prints the path of a python3 that imports Debian's `consul` module (python3-consul, python-consul
# 0.7.1 on Debian 12) for test/integration/python-consul.test.ts. Order: $SVC_PYTHON3, then
# /usr/bin/python3 (where Debian's python3 packages are importable); when neither imports it and we
# are root on Debian, installs the distribution's python3-consul package. Quiet when it is present.
set -euo pipefail
source "$(dirname "$0")/apt-ensure.sh"

found() {
  local python=${SVC_PYTHON3:-/usr/bin/python3}
  [[ -x "$python" ]] && "$python" -c 'import consul' 2>/dev/null && echo "$python"
}

if bin=$(found); then
  echo "$bin"
  exit 0
fi
if [[ -n "${SVC_PYTHON3:-}" ]]; then
  echo "SVC_PYTHON3=$SVC_PYTHON3 cannot import consul (install python-consul for it, or unset SVC_PYTHON3)" >&2
  exit 1
fi
apt_ensure python3-consul 'install it (Debian/Ubuntu: apt-get install python3-consul), or set SVC_PYTHON3' \
  "installing Debian's python3-consul package" python3-consul
