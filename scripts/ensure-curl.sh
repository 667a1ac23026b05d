#!/usr/bin/env bash
# Prints the path of curl for the HTTPS tests (test/integration/listeners.test.ts); when it is
# missing and we are root on Debian, installs the distribution's curl package first.
set -euo pipefail
if bin=$(command -v curl); then
  echo "$bin"
  exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
  echo "curl not found: install it (Debian/Ubuntu: apt-get install curl)" >&2
  exit 1
fi
exec 9>"${TMPDIR:-/tmp}/svc-agent-ensure-curl.lock"
flock 9
if ! command -v curl >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q curl >&2 || { apt-get update -q >&2 && apt-get install -y -q curl >&2; }
fi
command -v curl
