#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Many SIGKILLs over one sweep: `approf sweep --resume` is started and killed
# with SIGKILL after a random delay, again and again (at least KILLS times,
# default 50), on one database. After every kill the file must pass PRAGMA
# integrity_check and hold at least the entries it held after the previous
# kill (a commit is never lost). A last resume finishes the sweep; then its
# stage_profile, placement, sweep_submesh and sweep_config rows must equal,
# row by row, those of an uninterrupted sweep: nothing lost, nothing
# duplicated. The delays are drawn from RANDOM seeded by APPROF_KILL_SEED
# (printed, so a failing run can be replayed) and scaled to the reference
# sweep's duration, so the kills land mid-sweep on fast and slow (sanitized)
# builds alike.
# Usage: kill_many.sh APPROF SQLITE3 WORKDIR [KILLS]
set -u
approf=$1
sqlite=$2
work=$3
want=${4:-50}
seed=${APPROF_KILL_SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$seed
rm -rf "$work"
mkdir -p "$work"
args=(sweep --model gpt --preset gpt2-small --layers 24 --cluster 2x8 --batch 64
      --micro-batches 8 --hardware v100-16g --backend model --quiet --commit-every 2)
. "$(dirname "$0")/../lib.sh"
# the shared fail(), with the seed that replays the run
fail() { echo "FAIL (seed $seed): $*"; exit 1; }
. "$(dirname "$0")/lib.sh"
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

t0=$(now_ms)
"$approf" "${args[@]}" --db "$work/ref.db" >/dev/null 2>"$work/ref.err" ||
  { cat "$work/ref.err"; fail "reference sweep"; }
ref_ms=$(( $(now_ms) - t0 ))
# Mean delay ~ 2/3 * ref_ms / want: even if a restart lost no time to
# start-up and resume, the kills would cover two thirds of the sweep, so all
# of them land before it ends; in practice each restart spends part of its
# delay re-opening and skipping done tuples.
hi=$(( ref_ms * 4 / (3 * want) ))
[ $hi -gt 400 ] && hi=400
[ $hi -lt 20 ] && hi=20
echo "reference sweep: ${ref_ms} ms; kill delays 5..${hi} ms; seed $seed"

count() { "$sqlite" "$work/killed.db" "SELECT count(*) FROM stage_profile;" 2>/dev/null || echo 0; }
kills=0
prev=0
points=""
attempt=0
while [ $kills -lt "$want" ]; do
  attempt=$((attempt + 1))
  [ $attempt -le $((want * 3)) ] || fail "only $kills kills landed in $attempt attempts"
  "$approf" "${args[@]}" --db "$work/killed.db" --resume >/dev/null 2>>"$work/killed.err" &
  pid=$!
  ms=$(( 5 + RANDOM % (hi - 4) ))
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  kill -KILL $pid 2>/dev/null
  wait $pid
  rc=$?
  if [ $rc = 0 ]; then
    fail "the sweep finished after $kills kills (wanted $want): make it bigger"
  elif [ $rc != 137 ]; then
    tail -5 "$work/killed.err"; fail "sweep exited $rc"
  fi
  kills=$((kills + 1))
  [ -e "$work/killed.db" ] || continue
  ic=$("$sqlite" "$work/killed.db" "PRAGMA integrity_check;" 2>&1)
  [ "$ic" = ok ] || fail "integrity_check after kill $kills: $ic"
  n=$(count)
  [ "$n" -ge "$prev" ] || fail "kill $kills: $n entries, $prev before: committed rows lost"
  prev=$n
  points="$points $n"
done
distinct=$(printf '%s\n' $points | sort -un | wc -l)
"$approf" "${args[@]}" --db "$work/killed.db" --resume >/dev/null 2>>"$work/killed.err" ||
  { tail -5 "$work/killed.err"; fail "final resume"; }

compare() {
  local a d
  a=$("$sqlite" "$work/ref.db" "SELECT count(*) FROM $1;")
  [ "$a" -gt 0 ] || fail "reference has no $1 rows"
  d=$(rows_differ "$work/killed.db" "$work/ref.db" "$1")
  [ "$d" = 0 ] || fail "$1: $d rows differ from the uninterrupted sweep"
  echo "$1: $a rows identical"
}
compare stage_profile
compare placement
compare sweep_submesh
compare sweep_config
n=$("$sqlite" "$work/killed.db" "SELECT count(*) FROM sweep;")
[ "$n" = 1 ] || fail "expected one sweep, found $n"
st=$("$sqlite" "$work/killed.db" "SELECT status FROM sweep;")
[ "$st" = complete ] || fail "sweep status $st"
ic=$("$sqlite" "$work/killed.db" "PRAGMA integrity_check;")
[ "$ic" = ok ] || fail "final integrity_check: $ic"
echo "ok: $kills SIGKILLs survived (seed $seed), landing at $distinct distinct commit points of $prev/$(
  "$sqlite" "$work/ref.db" "SELECT count(*) FROM stage_profile;") entries"
