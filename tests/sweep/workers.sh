#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# approf sweep --workers N: the database equals the one-thread sweep row by
# row (entries, placements, sweep, submeshes, configs, layers; not row ids
# nor the 'reused' flag, which depends on each worker's own reuse table), and
# so do the entry lines on stdout (results are handed on in tuple order):
# resnet50 8 layers on 2x4 with 1 and 3 workers; gpt2-small with every
# residual ILP through CBC (serialised across workers) with 4; individual
# mode (ranges composed after the workers) with 2; --shard 1/2 with 2. A
# SIGINT mid-sweep with 4 workers leaves a consistent, interrupted sweep (exit
# 130, the resume hint) that --resume --workers 4 completes to the same rows.
# With MPIRUN and HAVE_MPI=1: mpirun -np 2 with 2 workers per rank, same rows.
# Bad --workers values are usage errors (exit 2) that name the option and
# leave no database behind.
# Usage: workers.sh APPROF SQLITE3 WORKDIR [MPIRUN HAVE_MPI]
set -u
approf=$1
sqlite=$2
work=$3
mpirun=${4:-}
have_mpi=${5:-0}
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"

# run NAME ARGS...: approf sweep ARGS --db $work/NAME.db, stdout to NAME.out
run() {
  local name=$1; shift
  "$approf" sweep --backend model "$@" --db "$work/$name.db" >"$work/$name.out" \
    2>"$work/$name.err" || fail_with "$work/$name.err" "approf sweep $* ($name)"
}
# same_lines A B LABEL: the same entry lines on stdout, in the same order
same_lines() {
  grep '^result\[' "$work/$1.out" >"$work/$1.lines"
  grep '^result\[' "$work/$2.out" >"$work/$2.lines"
  [ -s "$work/$1.lines" ] || fail "$3: no entry lines"
  same_file "$work/$1.lines" "$work/$2.lines" "$3: entry lines differ"
}

# 1. resnet50, composition: 1 vs 3 workers (entry lines compared too)
comp=(--model resnet50 --layers 8 --cluster 2x4 --micro-batches 4)
run r1 "${comp[@]}" --workers 1
run r3 "${comp[@]}" --workers 3
same_sweep "$work/r1.db" 1 "$work/r3.db" 1 "resnet50 --workers 3"
same_lines r1 r3 "resnet50 --workers 3"
grep -q "done: .* 0 already present" "$work/r3.err" || fail_with "$work/r3.err" "summary"
# the default (no --workers) is the one-thread sweep
run r0 "${comp[@]}"
same_sweep "$work/r1.db" 1 "$work/r0.db" 1 "resnet50 default workers"

# 2. gpt2-small, every residual ILP to CBC: 1 vs 4 workers
gpt=(--model gpt --preset gpt2-small --layers 6 --cluster 1x4 --micro-batches 4
     --sharding-solver cbc --quiet)
run g1 "${gpt[@]}" --workers 1
run g4 "${gpt[@]}" --workers 4
same_sweep "$work/g1.db" 1 "$work/g4.db" 1 "gpt2-small cbc --workers 4"

# 3. individual mode (ranges composed on the main thread afterwards)
ind=(--model resnet50 --layers 8 --cluster 2x4 --micro-batches 4 --profile-mode individual --quiet)
run i1 "${ind[@]}" --workers 1
run i2 "${ind[@]}" --workers 2
same_sweep "$work/i1.db" 1 "$work/i2.db" 1 "individual --workers 2"

# 4. a shard of a sweep
run s1 "${comp[@]}" --shard 1/2 --quiet
run s2 "${comp[@]}" --shard 1/2 --quiet --workers 2
same_sweep "$work/s1.db" 1 "$work/s2.db" 1 "--shard 1/2 --workers 2"

# 5. SIGINT mid-sweep with 4 workers, then --resume with 4 workers
slow=(--model gpt --preset gpt3-1.3b --layers 16 --cluster 2x4 --batch 64 --micro-batches 8
      --quiet --commit-every 4)
run ref "${slow[@]}" --workers 1
full=$("$sqlite" "$work/ref.db" "SELECT count(*) FROM stage_profile")
landed=0
for attempt in 1 2 3 4 5; do
  db="$work/int$attempt.db"
  "$approf" sweep --backend model "${slow[@]}" --workers 4 --db "$db" >/dev/null \
    2>"$work/int.err" &
  pid=$!
  # once entries are committed the handler is installed and the sweep is under way
  for _ in $(seq 1 500); do
    n=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile" 2>/dev/null || echo 0)
    [ "${n:-0}" -gt $((attempt * 40)) ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  kill -INT "$pid" 2>/dev/null
  wait "$pid"
  rc=$?
  # a SIGINT that lands after the last entry was written (a loaded
  # machine: the poll above saw the count late) is not mid-sweep: again
  if [ $rc = 130 ] &&
     [ "$("$sqlite" "$db" "SELECT count(*) FROM stage_profile")" -lt "$full" ]; then
    landed=1
    break
  fi
  [ $rc = 0 ] || [ $rc = 130 ] || fail_with "$work/int.err" "interrupted sweep exited $rc, want 130"
done
[ $landed = 1 ] || fail "no SIGINT landed mid-sweep (the sweep finished too fast)"
says_text "$work/int.err" "interrupted by SIGINT" "no interrupt message"
says_text "$work/int.err" "resume with the same command and --resume" "no resume hint"
[ "$("$sqlite" "$db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check after SIGINT"
[ "$("$sqlite" "$db" "SELECT status FROM sweep")" = interrupted ] || fail "sweep not marked interrupted"
part=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile")
[ "$part" -gt 0 ] && [ "$part" -lt "$full" ] || fail "interrupted sweep has $part of $full entries"
# every tuple written is whole (both phases): the workers' results go in whole
half=$("$sqlite" "$db" "SELECT count(*) FROM (SELECT 1 FROM stage_profile GROUP BY
  start_layer,end_layer,submesh_index,config_index HAVING count(*) != 2)")
[ "$half" = 0 ] || fail "$half tuples with one phase after SIGINT"
"$approf" sweep --backend model "${slow[@]}" --workers 4 --db "$db" --resume \
  2>"$work/resume.err" || fail_with "$work/resume.err" "--resume --workers 4"
says_text "$work/resume.err" "resuming sweep 1" "did not resume"
grep -q "$part already present" "$work/resume.err" || fail_with "$work/resume.err" "resume count"
same_sweep "$work/ref.db" 1 "$db" 1 "SIGINT + --resume --workers 4"

# 6. mpirun -np 2, 2 workers per rank (only the main thread of a rank calls MPI)
mpi_note="no MPI"
if [ "$have_mpi" = 1 ] && [ -n "$mpirun" ] && command -v "$mpirun" >/dev/null 2>&1; then
  env OMPI_MCA_mca_base_component_disable_dlclose=1 \
    PMIX_MCA_mca_base_component_disable_dlclose=1 \
    "ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}fast_unwind_on_malloc=0" \
    "LSAN_OPTIONS=${LSAN_OPTIONS:-}${LSAN_OPTIONS:+:}suppressions=$(cd "$(dirname "$0")/../mpi" && pwd)/lsan-openmpi.supp:print_suppressions=0" \
    "$mpirun" -np 2 --allow-run-as-root --oversubscribe "$approf" sweep --backend model \
    "${comp[@]}" --workers 2 --db "$work/mpi.db" >"$work/mpi.out" 2>"$work/mpi.err" ||
    fail_with "$work/mpi.err" "mpirun -np 2 --workers 2"
  same_sweep "$work/r1.db" 1 "$work/mpi.db" 1 "mpirun -np 2 --workers 2"
  mpi_note="mpirun -np 2 checked"
fi

# 7. bad values: usage errors naming --workers, no database
for bad in 0 257 -1 abc 2x ""; do
  "$approf" sweep --model mlp --backend model --workers "$bad" --db "$work/u.db" \
    >/dev/null 2>"$work/u.err"
  rc=$?
  [ $rc = 2 ] || fail "--workers '$bad': exit $rc, want 2"
  says_text "$work/u.err" "--workers" "--workers '$bad': option not named"
  grep -q "Try 'approf sweep --help'" "$work/u.err" || fail "--workers '$bad': no help hint"
  [ ! -e "$work/u.db" ] || fail "--workers '$bad' created a database"
done
"$approf" sweep --model mlp --backend model --workers >/dev/null 2>"$work/u.err"
[ $? = 2 ] || fail "--workers without a value: want exit 2"
"$approf" sweep --help | grep -q -- "--workers N" || fail "--help does not list --workers"
echo "ok: --workers 2, 3, 4 equal one worker row by row; SIGINT at $part of $full entries resumed; $mpi_note"
