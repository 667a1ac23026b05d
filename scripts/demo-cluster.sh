#!/usr/bin/env bash
# A three-host mesh on one machine: 3 etcd members and 3 agents (two servers, one client) on
# loopback ports with temporary dirs. Prints how to try it; Ctrl-C stops everything and removes
# the dirs. Run `npm run build` first. Ports: etcd clients 22379/22381/22383, peers 22390/22392/22394;
# agents 18501-18503.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
main="$root/dist/src/cli/main.js"
[[ -f "$main" ]] || { echo "missing $main: run npm run build first" >&2; exit 1; }
etcd=$("$root/scripts/ensure-etcd.sh")
work=$(mktemp -d "${TMPDIR:-/tmp}/svc-demo-cluster.XXXXXX")
etcd_pids=()
agent_pids=()

stop() {
  trap - INT TERM EXIT
  echo
  echo "stopping..."
  # Agents first, while etcd still answers: each removes its member entry as it leaves.
  for pid in "${agent_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${agent_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for pid in "${etcd_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap stop INT TERM EXIT

client_port() { echo $((22379 + 2 * $1)); }
peer_port() { echo $((22390 + 2 * $1)); }
cluster=""
for i in 0 1 2; do cluster+="${cluster:+,}e$i=http://127.0.0.1:$(peer_port $i)"; done
for i in 0 1 2; do
  "$etcd" --name "e$i" --data-dir "$work/etcd-$i" \
    --listen-client-urls "http://127.0.0.1:$(client_port $i)" --advertise-client-urls "http://127.0.0.1:$(client_port $i)" \
    --listen-peer-urls "http://127.0.0.1:$(peer_port $i)" --initial-advertise-peer-urls "http://127.0.0.1:$(peer_port $i)" \
    --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token svc-demo \
    --logger zap --log-level error >"$work/etcd-$i.log" 2>&1 &
  etcd_pids+=($!)
done

etcd_flags=()
for i in 0 1 2; do etcd_flags+=(-etcd "http://127.0.0.1:$(client_port $i)"); done
# Wait for a leader before the first server creates the CA.
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$(client_port 0)/health" | grep -q '"health":"true"' && break
  sleep 0.1
done

start_agent() { # name port role-flag...
  local name=$1 port=$2
  shift 2
  mkdir -p "$work/$name"
  node "$main" agent -node "$name" -http-port "$port" -data-dir "$work/$name" "${etcd_flags[@]}" "$@" \
    >"$work/$name.log" 2>&1 &
  agent_pids+=($!)
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/v1/status/leader" >/dev/null && return
    sleep 0.1
  done
  echo "agent $name did not start; see $work/$name.log" >&2
  exit 1
}
start_agent server-1 18501 -server
start_agent server-2 18502 -server
start_agent client-1 18503

cat <<TXT

A mesh of 3 etcd members and 3 agents is running (logs in $work):
  server-1  http://127.0.0.1:18501  (-server)
  server-2  http://127.0.0.1:18502  (-server)
  client-1  http://127.0.0.1:18503  (client)

Try:
  curl -s localhost:18503/v1/agent/members?pretty          # all three, role consul/node
  curl -s localhost:18501/v1/status/leader                 # the etcd leader
  curl -s -X PUT -d '{"Action":"deny"}' 'localhost:18501/v1/connect/intentions/exact?source=web&destination=db'
  curl -s -X POST -d '{"Target":"db","ClientCertURI":"spiffe://x.consul/ns/default/dc/dc1/svc/web"}' \\
    localhost:18503/v1/agent/connect/authorize             # decided on the client by the intention written on server-1
  curl -s -X PUT -d hello localhost:18502/v1/kv/greeting && curl -s localhost:18503/v1/kv/greeting?raw

Ctrl-C stops everything.
TXT
wait
