#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SIGINT, SIGTERM and SIGHUP stop a sweep cleanly: it commits what it has, marks the
# sweep interrupted, says how many entries are committed and how to resume,
# and exits 128 + signal (130, 143, 129). The count it prints must be the count
# in the file, the file must pass integrity_check, and resuming must give
# exactly the rows of an uninterrupted sweep.
# Usage: signals.sh APPROF SQLITE3 WORKDIR
set -u
approf=$1
sqlite=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
args=(sweep --model gpt --preset gpt2-small --layers 16 --cluster 2x4 --batch 64
      --micro-batches 8 --hardware v100-16g --backend model --quiet --commit-every 4)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"

"$approf" "${args[@]}" --db "$work/ref.db" >/dev/null 2>"$work/ref.err" ||
  { cat "$work/ref.err"; fail "reference sweep"; }
total=$("$sqlite" "$work/ref.db" "SELECT count(*) FROM stage_profile;")

for sig in INT TERM HUP; do
  case $sig in INT) want=130 ;; TERM) want=143 ;; HUP) want=129 ;; esac
  db="$work/$sig.db"
  landed=0
  # Wait until the sweep has committed something, then signal it; retry with
  # a fresh file if the sweep somehow finished first.
  for try in 1 2 3 4 5; do
    rm -f "$db" "$db-wal" "$db-shm"
    "$approf" "${args[@]}" --db "$db" >/dev/null 2>"$work/$sig.err" &
    pid=$!
    for _ in $(seq 1 200); do
      n=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile;" 2>/dev/null || echo 0)
      [ "${n:-0}" -gt 0 ] && break
      sleep 0.01
    done
    kill -s $sig $pid 2>/dev/null
    wait $pid
    rc=$?
    [ $rc = 0 ] && continue
    landed=1
    break
  done
  [ $landed = 1 ] || fail "SIG$sig: the sweep always finished before the signal"
  [ $rc = $want ] || { cat "$work/$sig.err"; fail "SIG$sig: exit $rc, expected $want"; }
  grep -q "approf: interrupted by SIG$sig: sweep 1 has [0-9]* entries committed in $db" \
    "$work/$sig.err" || { cat "$work/$sig.err"; fail "SIG$sig: no 'interrupted' message"; }
  grep -q "resume with the same command and --resume" "$work/$sig.err" ||
    { cat "$work/$sig.err"; fail "SIG$sig: no resume hint"; }
  said=$(sed -n 's/.* has \([0-9]*\) entries committed.*/\1/p' "$work/$sig.err")
  ic=$("$sqlite" "$db" "PRAGMA integrity_check;")
  [ "$ic" = ok ] || fail "SIG$sig: integrity_check: $ic"
  have=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile;")
  [ "$said" = "$have" ] || fail "SIG$sig: message says $said entries, the file has $have"
  [ "$have" -gt 0 ] && [ "$have" -lt "$total" ] ||
    fail "SIG$sig: $have of $total entries: the signal did not land mid-sweep"
  st=$("$sqlite" "$db" "SELECT status FROM sweep;")
  [ "$st" = interrupted ] || fail "SIG$sig: sweep status '$st', expected interrupted"
  "$approf" "${args[@]}" --db "$db" --resume >/dev/null 2>>"$work/$sig.err" ||
    { cat "$work/$sig.err"; fail "SIG$sig: resume"; }
  same_as_ref "$db" "$work/ref.db" "SIG$sig, resumed"
  echo "ok: SIG$sig -> exit $rc with $have/$total entries committed; resumed to identical rows"
done
