#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Resume after real signals: a sweep killed with SIGKILL (and one stopped with
# SIGINT) at several points and resumed each time must end with exactly the
# rows of an uninterrupted sweep — nothing lost, nothing duplicated — and
# pass PRAGMA integrity_check after every kill.
# Usage: resume_kill.sh APPROF SQLITE3 WORKDIR
set -u
approf=$1
sqlite=$2
work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
args=(sweep --model gpt --preset gpt2-small --layers 12 --cluster 2x4 --batch 64
      --micro-batches 8 --hardware v100-16g --backend model --quiet --commit-every 4)

t0=$(date +%s%N)
"$approf" "${args[@]}" --db "$work/ref.db" >/dev/null 2>"$work/ref.err" ||
  fail_with "$work/ref.err" "reference sweep"
# kill points are fractions of this machine's uninterrupted run, so that a
# fast machine (or a slow sanitizer build) still sees kills mid-sweep
ref_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$ref_ms" -ge 1 ] || ref_ms=1

dump() {
  "$sqlite" "$1" "SELECT start_layer,end_layer,submesh_index,config_index,phase,
    printf('%.17g',compute_cost),peak_memory,invar_size,outvar_size,temp_buffer_size,
    available_memory,intermediate_size,initial_size,status FROM stage_profile
    ORDER BY 1,2,3,4,5;"
}

kills=0
sigints=0
for attempt in $(seq 1 60); do
  "$approf" "${args[@]}" --db "$work/killed.db" --resume >/dev/null 2>>"$work/killed.err" &
  pid=$!
  # a different point each time: 3..40 % of the uninterrupted run
  ms=$(( ref_ms * ((attempt * 37) % 16 * 5 + 6) / 200 ))
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  if [ $((attempt % 7)) = 3 ]; then sig=INT; else sig=KILL; fi
  kill -s $sig $pid 2>/dev/null
  wait $pid
  rc=$?
  if [ $rc = 0 ] && [ $kills = 0 ]; then
    # finished before the first kill: start again on a fresh file
    rm -f "$work/killed.db" "$work/killed.db-wal" "$work/killed.db-shm"
    continue
  elif [ $rc = 0 ]; then
    break
  elif [ $rc = 137 ]; then
    kills=$((kills + 1))
  elif [ $rc = 130 ]; then
    sigints=$((sigints + 1))
  else
    fail_with "$work/killed.err" "sweep exited $rc"
  fi
  [ ! -s "$work/killed.db" ] || integrity_ok "$sqlite" "$work/killed.db" "after kill $attempt"
done
# finish whatever is left
"$approf" "${args[@]}" --db "$work/killed.db" --resume >/dev/null 2>>"$work/killed.err" ||
  fail "final resume"
[ $kills -ge 1 ] || fail "no kill landed mid-sweep (the sweep finished too fast)"
dump "$work/ref.db" >"$work/ref.txt"
dump "$work/killed.db" >"$work/killed.txt"
[ -s "$work/ref.txt" ] || fail "reference has no rows"
same_file "$work/killed.txt" "$work/ref.txt" "rows after the kills"
n=$("$sqlite" "$work/killed.db" "SELECT count(*) FROM sweep;")
[ "$n" = 1 ] || fail "expected one sweep, found $n"
st=$("$sqlite" "$work/killed.db" "SELECT status FROM sweep;")
[ "$st" = complete ] || fail "sweep status $st"
echo "ok: $kills SIGKILLs and $sigints SIGINTs survived, $(wc -l <"$work/ref.txt") rows identical"
