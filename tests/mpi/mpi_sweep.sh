#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mpirun -np R approf sweep on the analytic backend: rank 0 alone writes,
# and the database equals a single-process sweep row by row (composition
# with 2 ranks, with ZeRO 0-3 too, individual mode with 3); the entry lines and the summary come
# once, from rank 0. A SIGINT to rank 1 mid-sweep leaves a consistent,
# interrupted sweep that `mpirun ... --resume` completes to the same rows.
# Skips (77) when the build has no MPI or mpirun is missing.
# Usage: mpi_sweep.sh APPROF SQLITE3 MPIRUN HAVE_MPI WORKDIR
set -u
approf=$1
sqlite=$2
mpirun=$3
have_mpi=$4
work=$5
[ "$have_mpi" = 1 ] || { echo "skip: built without MPI"; exit 77; }
command -v "$mpirun" >/dev/null 2>&1 || { echo "skip: no mpirun"; exit 77; }
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
# Sanitizer builds: Open MPI keeps allocations to exit in components it
# dlopens; keep them loaded and unwind fully so that the suppressions name
# them (no effect on ordinary builds; only for the mpirun runs).
mpienv=(env OMPI_MCA_mca_base_component_disable_dlclose=1
  PMIX_MCA_mca_base_component_disable_dlclose=1
  "ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}fast_unwind_on_malloc=0"
  "LSAN_OPTIONS=${LSAN_OPTIONS:-}${LSAN_OPTIONS:+:}suppressions=$(cd "$(dirname "$0")" && pwd)/lsan-openmpi.supp:print_suppressions=0")
mpi() { local np=$1; shift; "${mpienv[@]}" "$mpirun" -np "$np" --allow-run-as-root --oversubscribe "$@"; }

# 1. composition, 2 ranks
comp=(sweep --model resnet50 --layers 8 --cluster 2x4 --micro-batches 4 --backend model)
"$approf" "${comp[@]}" --quiet --db "$work/single.db" 2>"$work/single.err" ||
  fail_with "$work/single.err" "single-process sweep"
mpi 2 "$approf" "${comp[@]}" --db "$work/mpi.db" >"$work/mpi.out" 2>"$work/mpi.err" ||
  fail_with "$work/mpi.err" "mpirun -np 2 sweep"
same_sweep "$work/single.db" 1 "$work/mpi.db" 1 "mpirun -np 2"
n=$("$sqlite" "$work/single.db" "SELECT count(*) FROM stage_profile")
lines=$(grep -c '^result\[' "$work/mpi.out")
uniq=$(grep '^result\[' "$work/mpi.out" | sort -u | wc -l)
[ "$lines" = "$n" ] && [ "$uniq" = "$n" ] ||
  fail "expected $n entry lines once each from rank 0, got $lines ($uniq distinct)"
[ "$(grep -c 'done: ' "$work/mpi.err")" = 1 ] || fail_with "$work/mpi.err" "one summary expected"
[ "$("$sqlite" "$work/mpi.db" "SELECT count(*) FROM sweep")" = 1 ] || fail "one sweep row expected"

# 1b. every ZeRO stage, 2 ranks: each rank profiles every other tuple, so
# a stage's ZeRO-2 variant lands on another rank than its ZeRO-0 one; its
# rows are the same as in one process (docs/variants.md, "Determinism
# across shards")
"$approf" "${comp[@]}" --zero 0,1,2,3 --quiet --db "$work/zsingle.db" 2>"$work/zsingle.err" ||
  fail_with "$work/zsingle.err" "single-process ZeRO sweep"
mpi 2 "$approf" "${comp[@]}" --zero 0,1,2,3 --quiet --db "$work/zmpi.db" 2>"$work/zmpi.err" ||
  fail_with "$work/zmpi.err" "mpirun -np 2 ZeRO sweep"
same_sweep "$work/zsingle.db" 1 "$work/zmpi.db" 1 "mpirun -np 2, ZeRO 0-3"

# 2. individual mode, 3 ranks (ranges composed by rank 0 after all ranks)
ind=(sweep --model mlp --layers 2 --cluster 1x4 --micro-batches 4 --profile-mode individual
     --backend model --quiet)
"$approf" "${ind[@]}" --db "$work/isingle.db" 2>"$work/isingle.err" ||
  fail_with "$work/isingle.err" "single-process individual sweep"
mpi 3 "$approf" "${ind[@]}" --db "$work/impi.db" 2>"$work/impi.err" ||
  fail_with "$work/impi.err" "mpirun -np 3 individual sweep"
same_sweep "$work/isingle.db" 1 "$work/impi.db" 1 "mpirun -np 3 individual"

# 3. SIGINT to rank 1 mid-sweep, then resume under mpirun
slow=(sweep --model gpt --preset gpt3-1.3b --layers 16 --cluster 2x4 --batch 64
      --micro-batches 8 --backend model --quiet --commit-every 4)
t0=$(date +%s%N)
"$approf" "${slow[@]}" --db "$work/ref.db" 2>"$work/ref.err" ||
  fail_with "$work/ref.err" "reference sweep"
# the signal goes at a fraction of this machine's one-process run (25 %, then
# less each time the sweep finished first), so a fast machine sees it too
ref_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
landed=0
for attempt in 1 2 3 4 5; do
  db="$work/int$attempt.db"
  # mpirun itself in the background (not a function: its subshell would hide the ranks).
  # Once rank 1 exits non-zero Open MPI kills rank 0 (SIGTERM, then SIGKILL
  # odls_base_sigkill_timeout seconds later, 1 by default): with 0 rank 0 is
  # killed at once, as a loaded machine does it by not running rank 0 for a
  # second, so its report must come before it releases the other ranks
  "${mpienv[@]}" OMPI_MCA_odls_base_sigkill_timeout=0 "$mpirun" -np 2 --allow-run-as-root --oversubscribe "$approf" "${slow[@]}" --db "$db" \
    >/dev/null 2>"$work/int.err" &
  mp=$!
  # wait for the ranks, then give them a moment of work
  rank1=
  for _ in $(seq 1 100); do
    for p in $(pgrep -P "$mp" 2>/dev/null); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && rank1=$p
    done
    [ -n "$rank1" ] && break
    sleep 0.05
  done
  ms=$(( ref_ms / (4 * attempt) ))
  [ $ms -ge 40 ] || ms=40
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  [ -n "$rank1" ] && kill -INT "$rank1" 2>/dev/null
  wait "$mp"
  rc=$?
  if [ $rc != 0 ]; then
    landed=1
    break
  fi
done
[ $landed = 1 ] || fail "no SIGINT landed mid-sweep (the sweep finished too fast)"
# the interrupted rank names its signal; rank 0 (which mpirun may stop with
# SIGTERM as soon as rank 1 exits) names the sweep and how to resume
says_text "$work/int.err" "rank 1 interrupted by SIGINT" "no interrupt message from rank 1"
grep -q "interrupted by SIG\(INT\|TERM\): sweep 1 has" "$work/int.err" ||
  fail_with "$work/int.err" "no interrupt message from rank 0"
[ "$("$sqlite" "$db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check after SIGINT"
[ "$("$sqlite" "$db" "SELECT status FROM sweep")" = interrupted ] || fail "sweep not marked interrupted"
part=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile")
full=$("$sqlite" "$work/ref.db" "SELECT count(*) FROM stage_profile")
[ "$part" -lt "$full" ] || fail "interrupted sweep has all $full entries"
mpi 2 "$approf" "${slow[@]}" --db "$db" --resume 2>"$work/resume.err" ||
  fail_with "$work/resume.err" "mpirun --resume"
says_text "$work/resume.err" "resuming sweep 1" "did not resume"
same_sweep "$work/ref.db" 1 "$db" 1 "SIGINT + mpirun --resume"
echo "ok: mpirun sweeps equal single-process sweeps (interrupted at attempt $attempt, $part of $full entries)"
