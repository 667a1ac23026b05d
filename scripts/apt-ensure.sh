# Sourced by the ensure-*.sh scripts. apt_ensure NAME HINT INSTALLING PACKAGE...: when the script's
# own `found` function finds nothing, installs Debian's PACKAGEs (root on Debian only; otherwise
# prints "NAME not found: HINT"), one test file at a time (a lock per NAME: the others wait and then
# find it), and prints what `found` finds afterwards. Exits in every case.
apt_ensure() {
  local name=$1 hint=$2 installing=$3 bin
  shift 3
  if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    echo "$name not found: $hint" >&2
    exit 1
  fi
  exec 9>"${TMPDIR:-/tmp}/svc-agent-ensure-$name.lock"
  flock 9
  if ! bin=$(found); then
    echo "$name not found: $installing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "$@" >&2 || { apt-get update -q >&2 && apt-get install -y -q "$@" >&2; }
    bin=$(found) || { echo "$* was installed but no $name binary was found" >&2; exit 1; }
  fi
  echo "$bin"
  exit 0
}
