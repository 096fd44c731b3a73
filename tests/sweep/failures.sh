#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Failing entries are stored, not fatal: a model too big for the hardware
# gives 'oom' rows with cost inf (the time computed kept apart) and the
# reason, the sweep still completes,
# approf show prints inf, and apsolve exits 3 naming what has no finite entry.
# Bad options are usage errors (exit 2) that leave no database behind.
# Usage: failures.sh APPROF APSOLVE SQLITE3 WORKDIR
set -u
approf=$1 apsolve=$2 sqlite=$3 work=$4
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"

"$approf" sweep --model gpt --preset gpt3-1.3b --layers 4 --cluster 1x2 --hardware gtx-1080ti --variants alpa \
  --micro-batches 16 --backend model --quiet --db "$work/o.db" 2>"$work/o.err" || fail_with "$work/o.err" "sweep"
# The summary counts the entries that do not fit in memory apart from real
# failures (an entry out of memory is a result, not a failed measurement).
noom=$("$sqlite" "$work/o.db" "SELECT count(*) FROM stage_profile WHERE status='oom'")
nbad=$("$sqlite" "$work/o.db" "SELECT count(*) FROM stage_profile WHERE status NOT IN ('ok','oom')")
grep -q "written, 0 already present, $noom do not fit in memory, $nbad failed," "$work/o.err" ||
  fail_with "$work/o.err" "summary does not count $noom out of memory and $nbad failed apart"
st=$("$sqlite" "$work/o.db" "SELECT status FROM sweep")
[ "$st" = complete ] || fail "sweep status $st"
# an oom row's compute_cost column keeps the seconds computed for it
# (CostdbEntry.unfit_cost, for apsolve's cp/ep steps); its cost, as every
# costdb reader hands it out (the CSV export here), is inf
n=$("$sqlite" "$work/o.db" "SELECT count(*) FROM stage_profile WHERE status='oom'
      AND compute_cost > 0 AND compute_cost < 1e308
      AND error LIKE 'needs % GiB, % GiB available on gtx-1080ti'")
[ "$n" = "$noom" ] || fail "$n of $noom oom rows keep their computed time and a reason"
"$approf" export --db "$work/o.db" --output "$work/o.csv" 2>"$work/x.err" ||
  fail_with "$work/x.err" "export"
n=$(grep -c ',inf,.*,oom,' "$work/o.csv")
[ "$n" = "$noom" ] || fail "$n of $noom oom rows exported with cost inf"
"$approf" show --db "$work/o.db" | grep -q "compute_cost=inf" || fail "show does not print inf"
"$apsolve" --db "$work/o.db" --no-store >"$work/s.out" 2>"$work/s.err"
rc=$?
[ $rc = 3 ] || fail "apsolve exit $rc, want 3"
says_text "$work/s.err" "no finite entry" "apsolve message"

for bad in "--hardware nosuch" "--cluster 2x3" "--cluster 0x4" "--layers 0" "--backend gpu" "--dtype f64" \
           "--submesh-space manual:1x3x" "--micro-batches -1" "--shard 2/2" "--bogus"; do
  # shellcheck disable=SC2086
  "$approf" sweep --model mlp $bad --db "$work/u.db" >/dev/null 2>"$work/u.err"
  rc=$?
  [ $rc = 2 ] || fail "'$bad': exit $rc, want 2"
  grep -q "Try 'approf sweep --help'" "$work/u.err" || fail "'$bad': no help hint"
  [ ! -e "$work/u.db" ] || fail "'$bad' created a database"
done
"$approf" sweep --model nosuchmodel --backend model --quiet --db "$work/n.db" 2>"$work/n.err"
[ $? = 2 ] || fail "unknown model: want exit 2"
grep -q "nosuchmodel" "$work/n.err" || fail "unknown model not named"
# A host with more GPUs than the spec's hosts have: a usage error, named.
rc=0; "$approf" sweep --model mlp --cluster 1x16 --backend model --db "$work/c16.db" \
  2>"$work/c16.err" || rc=$?
[ $rc = 2 ] || fail "--cluster 1x16 on 8-GPU hosts: exit $rc, want 2"
says_text "$work/c16.err" "--cluster 1x16: hosts of a100-40g have 8 GPUs" "--cluster 1x16 not explained"
[ -e "$work/c16.db" ] && fail "--cluster 1x16 created the database"
rc=0; "$approf" sweep --model mlp --cluster 100000x8 --backend model --db "$work/cbig.db" \
  2>"$work/cbig.err" || rc=$?
expect_rc 2 $rc "$work/cbig.err" "--cluster 100000x8"
says_text "$work/cbig.err" "at most 65536" "--cluster 100000x8 not explained"
# The same micro-batch size twice ran two identical sweeps: refused
rc=0; "$approf" sweep --model mlp --layers 2 --cluster 1x2 --backend model --micro-batch-sizes 2,4,2 \
  --db "$work/mbs.db" 2>"$work/mbs.err" || rc=$?
expect_rc 2 $rc "$work/mbs.err" "--micro-batch-sizes 2,4,2"
says_text "$work/mbs.err" "--micro-batch-sizes: 2 is given twice" "--micro-batch-sizes 2,4,2 not explained"
[ -e "$work/mbs.db" ] && fail "--micro-batch-sizes 2,4,2 created the database"

# The database deleted while the sweep runs: exit 1 saying so, not a
# success naming a file that no longer holds the entries.
landed=0
for try in 1 2 3 4 5; do
  db="$work/gone.db"
  rm -f "$db" "$db-wal" "$db-shm"
  "$approf" sweep --model gpt --preset gpt3-1.3b --layers 24 --cluster 2x8 --backend model \
    --quiet --commit-every 4 --db "$db" >/dev/null 2>"$work/gone.err" &
  pid=$!
  for _ in $(seq 1 300); do
    n=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile;" 2>/dev/null || echo 0)
    [ "${n:-0}" -gt 0 ] && break
    sleep 0.01
  done
  rm -f "$db" "$db-wal" "$db-shm"
  wait $pid
  rc=$?
  grep -q "deleted or replaced" "$work/gone.err" && { landed=1; break; }
  [ $rc = 0 ] || fail_with "$work/gone.err" "deleted database: exit $rc without saying so"
done
[ $landed = 1 ] || fail "the sweep always finished before the database was deleted"
[ $rc = 1 ] || fail "deleted database: exit $rc, want 1"
echo "ok: failures stored and reported; bad options rejected"
