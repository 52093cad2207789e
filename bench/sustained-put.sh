#!/usr/bin/env bash
# Sustained durable PUTs of new ~1 KiB order-like records (bench/wrk/order.json; {{n}} makes
# every key and tracking number new, so every value lives on and segments get rewritten),
# plain and --compression alternated, a fresh server and data directory per run: the
# compression write-cost measurement of docs/benchmarks-history.md ("Encryption and compression at
# rest"). Prints one line per run: requests and duration (µs), server CPU ticks (1/100 s),
# data directory MB at the end of the run and after a clean stop, status counts.
#
#   bash bench/sustained-put.sh [pairs (4)] [seconds per run (75)]
#
# Needs wrk (bench/install-wrk.sh) and a build (npm run build:all). Binds 127.0.0.1:7411 only.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PAIRS=${1:-4}
DUR=${2:-75}
BODY=$(cat "$ROOT/bench/wrk/order.json")
for pair in $(seq 1 "$PAIRS"); do
  for mode in plain compressed; do
    D=$(mktemp -d)
    extra=()
    [ "$mode" = compressed ] && extra=(--compression)
    node "$ROOT/bin/pithos" --port 7411 --host 127.0.0.1 --data-dir "$D/data" --auth-token bench --fsync always "${extra[@]}" >"$D/server.log" 2>&1 &
    PID=$!
    for _ in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:7411/livez && break; sleep 0.2; done
    c0=$(awk '{print $14+$15}' "/proc/$PID/stat")
    out=$(timeout $((DUR + 30)) wrk -t1 -c32 -d"${DUR}s" -s "$ROOT/bench/wrk/bench.lua" http://127.0.0.1:7411 -- template PUT '/records/o-{{n}}' "$BODY" 1000 "s$pair" bench '' 2>&1)
    c1=$(awk '{print $14+$15}' "/proc/$PID/stat")
    mb_end=$(du -sm "$D/data" | cut -f1)
    kill -TERM "$PID"
    wait "$PID" || true
    mb_stop=$(du -sm "$D/data" | cut -f1)
    summary=$(echo "$out" | sed -n 's/.*BENCH_SUMMARY duration_us=\([0-9]*\) requests=\([0-9]*\).*/requests=\2 duration_us=\1/p')
    echo "pair $pair $mode $summary cpu_ticks=$((c1 - c0)) dir_mb_end=$mb_end dir_mb_after_stop=$mb_stop $(echo "$out" | grep BENCH_STATUS) load=$(cut -d' ' -f1 /proc/loadavg)"
    rm -rf "$D"
  done
done
