#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SIGKILL at random points of the tools that write, besides the sweep
# (kill_many.sh): approf merge, approf import, approf hardware curves
# import, apsolve's plan store and apreport. Each command is first run once
# unkilled on a copy of its input database (the "after" state and its
# duration), then KILLS times (default 8) on fresh copies, killed with
# SIGKILL after a random delay in [0, duration]. After every kill:
#   - the database passes PRAGMA integrity_check;
#   - it holds the whole result or none of it: every table's row count
#     equals the "before" or the "after" state's (no partial merge, import,
#     curve set or plan);
#   - apreport: every report.json / trace.json present under its final name
#     parses as JSON (outputs are written to a temporary file and renamed).
# Then the command is run again unkilled on the last killed copy and must
# reach the "after" state's row counts. A kill "lands" when the process was
# still running; each command must see at least one landed kill.
# Delays come from RANDOM seeded by APPROF_KILL_SEED (printed).
# Usage: kill_tools.sh APPROF APSOLVE APREPORT SQLITE3 WORKDIR [KILLS]
set -u
approf=$1 apsolve=$2 apreport=$3 sqlite=$4 work=$5
kills=${6:-${APPROF_KILLS:-8}}
seed=${APPROF_KILL_SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$seed
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
echo "seed $seed, $kills kills per command"
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# counts DB: one line per table, "name rows" (sqlite_stat and the like left out)
counts() {
  local t
  for t in $("$sqlite" "$1" "SELECT name FROM sqlite_master WHERE type='table'
                               AND name NOT LIKE 'sqlite_%' ORDER BY name"); do
    echo "$t $("$sqlite" "$1" "SELECT count(*) FROM \"$t\"")"
  done
}

# json_ok DIR: every report.json / trace.json in DIR parses
json_ok() {
  local f
  for f in "$1"/report.json "$1"/trace.json; do
    [ -e "$f" ] || continue
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" 2>/dev/null || return 1
  done
  return 0
}

# --- inputs ----------------------------------------------------------------
small=(--model gpt --preset gpt2-small --layers 12 --cluster 2x8 --batch 64 --micro-batches 8
       --hardware v100-16g --backend model --quiet)
"$approf" sweep "${small[@]}" --db "$work/base.db" 2>"$work/base.err" ||
  fail_with "$work/base.err" "base sweep"
for k in 0 1; do
  "$approf" sweep "${small[@]}" --shard "$k/2" --db "$work/shard$k.db" 2>"$work/shard.err" ||
    fail_with "$work/shard.err" "shard sweep $k/2"
done
"$approf" export --db "$work/base.db" --format csv --output "$work/base.csv" ||
  fail "export for the import"
"$approf" sweep --model mlp --layers 2 --cluster 1x2 --backend model --quiet \
  --db "$work/empty.db" 2>/dev/null || fail "small sweep for the import's target"
# an nccl-tests all-reduce log over 1x8 (2.x column layout)
python3 - "$work/ar.log" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("# nThread 1 nGpus 8 minBytes 8 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20\n#\n# Using devices\n")
    for r in range(8):
        f.write("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] NVIDIA V100\n" % (r, 1000 + r, "node0", r, r + 7))
    f.write("#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
    f.write("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
    b = 8
    while b <= 1 << 32:
        us = 10 + b / 100e3
        f.write("%12d  %12d     float     sum      -1  %9.2f  %6.2f  %6.2f      0  %9.2f  %6.2f  %6.2f      0\n" % (b, b // 4, us, b / us / 1e3, b / us / 1e3, us, b / us / 1e3, b / us / 1e3))
        b *= 2
    f.write("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n#\n")
PY

# --- one command under kills -------------------------------------------------
# kill_case NAME BEFORE_DB OUTDIR_OR_- CMD... ; "@DB" and "@OUT" in CMD are
# replaced by the working copy and the output directory.
kill_case() {
  local name=$1 before=$2 usesout=$3 t0 dur i d pid rc landed=0 a db out redo_db= redo_out=
  shift 3
  local dir="$work/$name"
  mkdir -p "$dir"
  run() { # run DB OUT: the command in the background, its pid in $pid
    local args=() x
    for x in "${cmd[@]}"; do
      x=${x//@DB/$1}; x=${x//@OUT/$2}; args+=("$x")
    done
    "${args[@]}" >/dev/null 2>>"$dir/err" &
    pid=$!
  }
  local cmd=("$@")
  # the unkilled run: the after state and the duration
  cp "$before" "$dir/after.db"
  t0=$(now_ms)
  run "$dir/after.db" "$dir/out-after"
  wait $pid || fail_with "$dir/err" "$name: the unkilled run failed"
  dur=$(( $(now_ms) - t0 ))
  [ $dur -lt 5 ] && dur=5
  counts "$before" >"$dir/before.counts"
  counts "$dir/after.db" >"$dir/after.counts"
  cmp -s "$dir/before.counts" "$dir/after.counts" && [ "$usesout" = - ] &&
    fail "$name: the unkilled run changed no table"
  for i in $(seq 1 "$kills"); do
    db="$dir/k$i.db" out="$dir/out-k$i"
    cp "$before" "$db"
    rm -f "$db-wal" "$db-shm" "$db-journal"
    d=$(( RANDOM % (dur + 1) ))
    run "$db" "$out"
    sleep "$(awk -v m="$d" 'BEGIN { printf "%.3f", m / 1000 }')"
    if kill -KILL $pid 2>/dev/null; then a=1; else a=0; fi
    wait $pid 2>/dev/null
    rc=$?
    [ $a = 1 ] && [ $rc = 137 ] && landed=$((landed + 1))
    integrity_ok "$sqlite" "$db" "$name kill $i (after ${d} ms)"
    counts "$db" >"$dir/k$i.counts"
    if ! cmp -s "$dir/k$i.counts" "$dir/before.counts" &&
       ! cmp -s "$dir/k$i.counts" "$dir/after.counts"; then
      diff "$dir/before.counts" "$dir/k$i.counts"; diff "$dir/after.counts" "$dir/k$i.counts"
      fail "$name kill $i (after ${d} ms): a partial result"
    fi
    if [ "$usesout" != - ] && [ -d "$out" ]; then
      json_ok "$out" || fail "$name kill $i (after ${d} ms): a truncated JSON output"
    fi
    # a copy the kill left as it was is the one to run again
    cmp -s "$dir/k$i.counts" "$dir/before.counts" && { redo_db=$db redo_out=$out; }
  done
  # a copy left in the before state reaches the after state when run again
  if [ -n "$redo_db" ]; then
    run "$redo_db" "$redo_out"
    wait $pid || fail_with "$dir/err" "$name: the run after the kills failed"
    counts "$redo_db" >"$dir/final.counts"
    same_file "$dir/final.counts" "$dir/after.counts" "$name: rerun after the kills"
    if [ "$usesout" != - ]; then
      json_ok "$redo_out" || fail "$name: the rerun's JSON outputs do not parse"
    fi
  fi
  [ $landed -gt 0 ] || fail "$name: no kill landed while it ran (${dur} ms)"
  local rerun="every kill came after the commit: no rerun"
  [ -n "$redo_db" ] && rerun="a killed copy run again is complete"
  echo "ok: $name (${dur} ms unkilled): $kills kills, $landed while running; $rerun"
}

kill_case merge "$work/empty.db" - "$approf" merge --db @DB "$work/shard0.db" "$work/shard1.db"
kill_case import "$work/empty.db" - "$approf" import --db @DB "$work/base.csv"
kill_case curves-import "$work/base.db" - "$approf" hardware curves import "$work/ar.log" \
  --db @DB --hardware v100-16g --collective all-reduce --group 1x8
kill_case plan-store "$work/base.db" - "$apsolve" --db @DB --quiet
kill_case apreport "$work/plan-store/after.db" out "$apreport" --db @DB --out @OUT
echo "ok: merge, import, curves import, plan store and apreport survive SIGKILL (seed $seed)"
