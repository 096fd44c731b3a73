#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Variant slots a stage does not have (docs/variants.md, "Storage": a
# memory level past the stage's distinct sharding points, ZeRO without
# data-parallel replicas, selective recomputation without attention) are
# counted apart from the failures in the summary and not stored; a sweep
# stopped (SIGINT, SIGKILL) and resumed costs their tuples again, stores
# nothing for them either, and ends with exactly the rows, placements and
# provenance of an uninterrupted sweep.
# Usage: skipped.sh APPROF SQLITE3 WORKDIR
set -u
approf=$1 sqlite=$2 work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
args=(sweep --model gpt --preset gpt2-small --layers 6 --cluster 1x4 --batch 64
      --micro-batches 8 --hardware v100-16g --backend model --variants all --quiet
      --commit-every 4)
"$approf" "${args[@]}" --db "$work/ref.db" 2>"$work/ref.err" || fail_with "$work/ref.err" "sweep"
summary=$(grep "^approf: sweep 1 done:" "$work/ref.err")
skipped=$(sed -n 's/.* failed, \([0-9]*\) skipped, .*/\1/p' <<<"$summary")
tuples=$(sed -n 's/.* done: \([0-9]*\) tuples, .*/\1/p' <<<"$summary")
written=$(sed -n 's/.* tuples, \([0-9]*\) entries written, .*/\1/p' <<<"$summary")
[ -n "$skipped" ] && [ -n "$tuples" ] && [ -n "$written" ] ||
  fail_with "$work/ref.err" "summary without its counts"
[ "$skipped" -gt 0 ] || fail_with "$work/ref.err" "the case has no skipped variant (the test proves nothing)"
grep -q " 0 failed, $skipped skipped, " "$work/ref.err" ||
  fail_with "$work/ref.err" "skipped variants counted as failures"
says_text "$work/ref.err" " - skipped: $skipped variant entries that do not apply to their stage" \
  "the summary's skipped line"
n=$("$sqlite" "$work/ref.db" "SELECT count(*) FROM stage_profile WHERE status = 'skipped'")
[ "$n" = 0 ] || fail "$n skipped entries stored"
n=$("$sqlite" "$work/ref.db" "SELECT count(*) FROM stage_profile")
[ "$n" = "$written" ] || fail "$n entries stored, the summary says $written"
[ $((written + skipped)) = $((2 * tuples)) ] ||
  fail "$written written + $skipped skipped is not two per tuple of $tuples"

# resuming the complete sweep: nothing to do, nothing counted again ("already
# present" counts the two slots of each tuple done, as for dominated variants)
"$approf" "${args[@]}" --db "$work/ref.db" --resume 2>"$work/again.err" ||
  fail_with "$work/again.err" "resume of the complete sweep"
grep -q " 0 entries written, $((2 * tuples)) already present, .* 0 skipped, " "$work/again.err" ||
  fail_with "$work/again.err" "resume of the complete sweep"

# stopped while its entries are being written, then resumed: the same rows
landed=0
for try in 1 2 3 4; do
  db="$work/stop.db"
  rm -f "$db" "$db-wal" "$db-shm"
  "$approf" "${args[@]}" --db "$db" >/dev/null 2>"$work/stop.err" &
  pid=$!
  for _ in $(seq 1 500); do
    n=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile" 2>/dev/null || echo 0)
    [ "${n:-0}" -gt 0 ] && break
    sleep 0.005
  done
  if [ $((try % 2)) = 1 ]; then sig=INT; else sig=KILL; fi
  kill -s $sig $pid 2>/dev/null
  wait $pid
  rc=$?
  [ $rc = 0 ] && continue # finished before the signal: again
  [ $rc = 130 ] || [ $rc = 137 ] || fail_with "$work/stop.err" "stopped sweep exited $rc"
  integrity_ok "$sqlite" "$db" "after SIG$sig"
  n=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile WHERE status = 'skipped'")
  [ "$n" = 0 ] || fail "$n skipped entries stored before SIG$sig"
  "$approf" "${args[@]}" --db "$db" --resume 2>"$work/resume.err" ||
    fail_with "$work/resume.err" "resume after SIG$sig"
  grep -q "sweep 1 resumed: .* already present, " "$work/resume.err" ||
    fail_with "$work/resume.err" "the resume did not continue the stopped sweep"
  same_sweep "$work/ref.db" 1 "$db" 1 "resumed after SIG$sig"
  landed=$((landed + 1))
done
[ $landed -ge 1 ] || fail "every sweep finished before its signal"
echo "ok: $skipped skipped entries counted apart, none stored; $landed resumes equal the uninterrupted sweep"
