#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The sweep's writer thread (profiler/sweep/sweep_writer.c, issue 38):
# 1. the full space (--variants all) of a small llama with 1 and 2 workers
#    stores the same rows (entries, placements, sweep), and the same as
#    with --commit-every 1 (a transaction per tuple: other batch bounds);
# 2. a database that refuses writes mid-sweep (a trigger another
#    connection adds while the sweep runs with 2 workers, so the writer
#    thread's INSERT fails): exit 1, the message names the database and
#    the cause, integrity ok, status interrupted, only whole tuples
#    committed, and once the trigger is gone --resume completes to the
#    rows of an uninterrupted sweep;
# 3. a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) with 2 workers: the
#    same, the cause being the write error.
# Usage: writer.sh APPROF SQLITE3 WORKDIR
set -u
approf=$1
sqlite=$2
work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"

run() { # NAME ARGS...: approf sweep ARGS --db $work/NAME.db
  local name=$1; shift
  "$approf" sweep --backend model "$@" --db "$work/$name.db" >/dev/null \
    2>"$work/$name.err" || fail_with "$work/$name.err" "approf sweep $* ($name)"
}
count() { "$sqlite" "$1" "SELECT count(*) FROM stage_profile"; }
# whole DB CASE: every tuple written has both phases
whole() {
  local half
  half=$("$sqlite" "$1" "SELECT count(*) FROM (SELECT 1 FROM stage_profile GROUP BY
    start_layer,end_layer,submesh_index,config_index HAVING count(*) != 2)")
  [ "$half" = 0 ] || fail "$2: $half tuples with one phase"
}
# stopped ERRFILE DB CASE REGEX STATUS: a failed sweep as promised (STATUS:
# interrupted, or running where the file could not take even that)
stopped() {
  local n st
  grep -q "^approf: .*$2" "$1" || fail_with "$1" "$3: the message does not name $2"
  grep -Eq "$4" "$1" || fail_with "$1" "$3: the message does not say '$4'"
  integrity_ok "$sqlite" "$2" "$3"
  st=$("$sqlite" "$2" "SELECT status FROM sweep")
  [[ "$st" =~ ^($5)$ ]] || fail "$3: sweep status '$st', want $5"
  whole "$2" "$3"
  n=$(count "$2")
  [ "$n" -gt 0 ] && [ "$n" -lt "$full" ] || fail "$3: $n of $full entries committed"
}

# 1. the full space, 1 and 2 workers, and a transaction per tuple
space=(--model llama --preset llama-3-8b --layers 6 --cluster 2x8 --hardware h100-sxm
       --micro-batches 8 --variants all --quiet)
run f1 "${space[@]}" --workers 1
run f2 "${space[@]}" --workers 2
run fc "${space[@]}" --workers 2 --commit-every 1
[ "$(count "$work/f1.db")" -gt 1000 ] || fail "the full space has $(count "$work/f1.db") entries"
same_sweep "$work/f1.db" 1 "$work/f2.db" 1 "--variants all, --workers 2"
same_sweep "$work/f1.db" 1 "$work/fc.db" 1 "--variants all, --commit-every 1"

# 2. refused writes mid-sweep: a trigger added while the sweep runs. The
#    sweep's whole space (about 1 s in a debug build, 57 k entries): Alpa's
#    plain space of this case ran in 0.35 s, too short for the trigger to
#    land in any of the attempts once the sweep grew faster (CI, 2026-12-02)
slow=(--model gpt --preset gpt3-1.3b --layers 16 --cluster 2x4 --batch 64 --micro-batches 8
      --variants all --quiet --commit-every 4)
run ref "${slow[@]}" --workers 1
full=$(count "$work/ref.db")
landed=0
for attempt in 1 2 3 4 5; do
  db="$work/refuse$attempt.db"
  "$approf" sweep --backend model "${slow[@]}" --workers 2 --db "$db" >/dev/null \
    2>"$work/refuse.err" &
  pid=$!
  for _ in $(seq 1 500); do
    n=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile" 2>/dev/null || echo 0)
    [ "${n:-0}" -gt $((attempt * 20)) ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  "$sqlite" "$db" ".timeout 20000" "CREATE TRIGGER refuse BEFORE INSERT ON stage_entry_block
    BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;" ||
    fail "cannot add the trigger"
  wait "$pid"
  rc=$?
  if [ $rc = 1 ]; then
    landed=1
    break
  fi
  expect_rc 0 $rc "$work/refuse.err" "refused writes (attempt $attempt)"
  # exit 0: the sweep must have finished before the trigger, whole
  n=$(count "$db")
  [ "$n" = "$full" ] || fail "refused writes: exit 0 with $n of $full entries (a refused write ignored)"
done
[ $landed = 1 ] || fail "the trigger never landed mid-sweep (the sweep finished first)"
not_crashed "$work/refuse.err" "refused writes"
stopped "$work/refuse.err" "$db" "refused writes" "refused by the test" interrupted
"$sqlite" "$db" "DROP TRIGGER refuse" || fail "cannot drop the trigger"
"$approf" sweep --backend model "${slow[@]}" --workers 2 --db "$db" --resume \
  2>"$work/refuse-resume.err" || fail_with "$work/refuse-resume.err" "refused writes: --resume"
same_sweep "$work/ref.db" 1 "$db" 1 "refused writes, then --resume"

# 3. a file-size limit, 2 workers: 4 times the reference's file, which the
#    write-ahead log (a copy of the pages of every commit) passes mid-sweep
#    (360 of 2456 entries committed when this was written; twice the file:
#    96, 8 times: the whole sweep)
limit=$(( $(stat -c %s "$work/ref.db") * 4 / 1024 ))
db="$work/fsize.db"
( trap '' XFSZ; ulimit -f "$limit"
  exec "$approf" sweep --backend model "${slow[@]}" --workers 2 --db "$db" ) >/dev/null \
  2>"$work/fsize.err"
expect_rc 1 $? "$work/fsize.err" "file-size limit"
stopped "$work/fsize.err" "$db" "file-size limit" "disk|full|I/O|large" "interrupted|running"
"$approf" sweep --backend model "${slow[@]}" --workers 2 --db "$db" --resume \
  2>"$work/fsize-resume.err" || fail_with "$work/fsize-resume.err" "file-size limit: --resume"
same_sweep "$work/ref.db" 1 "$db" 1 "file-size limit, then --resume"
echo "ok: the full space with 1 and 2 workers; refused writes and a file-size limit mid-sweep"
