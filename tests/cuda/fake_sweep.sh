#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# approf sweep --backend cuda end to end against the fake module (no GPU
# needed): the machine's defaults and records.
#  1. After approf probe: the sweep records the probe's measured: hardware
#     row, prices collectives with its curves and GEMMs with its shape grid
#     (options name both), takes the
#     cluster 1 x the GPU count and one worker per device, and its rows equal
#     a --workers 1 sweep. 1b: an optimizer step the module measured
#     replaces Adam's analytic bytes in apply_cost.
#  2. No probe yet: a new measured: row without curves and a notice saying so;
#     3 devices -> cluster 1x2 (power of two), 3 workers on devices 0,1,2.
#  3. --workers above the device count: a notice that workers share devices.
#  4. No device: --backend auto falls back to the analytic model with one
#     notice and the analytic defaults (1x8, a100-40g); --backend cuda exits 1.
#  5. With MPI: mpirun -np 4 approf probe over 2 "hosts" of 2 ranks
#     (APPROF_MPI_RANKS_PER_HOST=2) stores 1x2, 2x1 and 2x2 curves and the
#     inter-host figures; mpirun -np 4 approf sweep --backend cuda then takes
#     the 2x2 cluster, prices with those curves (and rank 0's GEMM grid on
#     every rank), and equals one process.
# Usage: fake_sweep.sh APPROF SQLITE3 FAKE_MODULE_DIR WORKDIR [MPIRUN HAVE_MPI]
set -euo pipefail
approf=$(realpath "$1") sqlite=$2 work=$4 mpirun=${5:-mpirun} have_mpi=${6:-0}
export APPROF_MODULE_DIR=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"; cd "$work" || fail "cd $work"
unset FAKE_APPROF_NODEV FAKE_APPROF_DEVICES
sweep() { # sweep DB [options]: stderr in DB.err
  local db=$1; shift
  "$approf" sweep --model gpt --num-layers 2 --layers 2 --micro-batches 2 --quiet \
    --db "$db" "$@" 2>"$db.err" || fail_with "$db.err" "sweep $db $*"
}
rows() {
  "$sqlite" "$1" "SELECT start_layer,end_layer,submesh_index,config_index,phase,
    quote(compute_cost),peak_memory,status FROM stage_profile ORDER BY 1,2,3,4,5;"
}

# --- 1 ---------------------------------------------------------------------------
export FAKE_APPROF_DEVICES=2
"$approf" probe --db probed.db 2>probe.err || fail_with probe.err "probe"
cp probed.db one.db
sweep probed.db --backend cuda
sweep one.db --backend cuda --workers 1
says_text probed.db.err "backend cuda (Fake GPU 40GB, devices 0,1) on a100-40g, 2 workers" "summary: devices and workers"
grep -q "cluster 1x2: this machine's GPUs" probed.db.err || fail "no cluster notice"
says_text probed.db.err "collectives from 2 measured curves" "curves not used"
[ "$("$sqlite" probed.db "SELECT count(*) FROM hardware")" = 1 ] || fail "a second hardware row"
[ "$("$sqlite" probed.db "SELECT h.kind || ' ' || s.cluster_hosts || 'x' || s.cluster_gpus
  FROM sweep s JOIN hardware h ON h.id = s.hardware_id")" = "measured 1x2" ] || fail "sweep row"
case $("$sqlite" probed.db "SELECT options FROM sweep") in *comm_curves*gemm_table*) ;; *) fail "options";; esac
# the probe's GEMM shape grid (bf16, the sweep's dtype) prices the sharding
# solver's GEMMs
says_text probed.db.err "GEMMs in bf16 from 216 measured shapes of hardware 1" "GEMM table not used"
[ "$(rows probed.db)" = "$(rows one.db)" ] || fail "2 workers differ from 1"
[ -n "$(rows probed.db)" ] || fail "no rows"

# 1b. A measured optimizer step (FAKE_APPROF_APPLY_SECONDS: 1000 s) takes
# the place of Adam's bytes at the memory bandwidth in every entry's
# apply_cost, both phases; the apply collectives stay priced. (A model
# small enough for the fake module's 1 GiB.)
small="--hidden 128 --heads 2 --seq-len 64 --vocab 512 --batch 8"
for d in adam.db plain.db; do
  "$approf" probe --db $d 2>probe.err || fail_with probe.err "probe"
done
# shellcheck disable=SC2086
FAKE_APPROF_APPLY_SECONDS=1000 sweep adam.db --backend cuda --workers 1 $small
# shellcheck disable=SC2086
sweep plain.db --backend cuda --workers 1 $small
bad=$("$sqlite" adam.db "ATTACH 'plain.db' AS o; SELECT count(*) FROM stage_profile a
  JOIN o.stage_profile b USING (start_layer, end_layer, submesh_index, config_index, phase)
  WHERE a.status != b.status OR (a.status = 'ok' AND
    NOT (a.apply_cost >= 1000 AND a.apply_cost - 1000 < b.apply_cost))")
[ "$bad" = 0 ] || fail "$bad entries without the measured optimizer step in apply_cost"
[ "$("$sqlite" adam.db "SELECT count(*) FROM stage_profile WHERE status = 'ok' AND apply_cost >= 1000")" -gt 0 ] ||
  fail "no entry with a measured optimizer step"

# --- 2 ---------------------------------------------------------------------------
export FAKE_APPROF_DEVICES=3
sweep fresh.db --backend cuda
grep -q "no 'approf probe' results for this machine" fresh.db.err || fail "no probe notice"
says_text fresh.db.err "devices 0,1,2) on a100-40g, 3 workers" "3 devices"
[ "$("$sqlite" fresh.db "SELECT kind || ' ' || fingerprint FROM hardware")" = \
  "measured measured:Fake GPU 40GB:3x40960MiB:driver 13.0:cuda 13.0:nccl 2.28.3" ] ||
  fail "measured row: $("$sqlite" fresh.db "SELECT kind, fingerprint FROM hardware")"
[ "$("$sqlite" fresh.db "SELECT cluster_hosts || 'x' || cluster_gpus || ' ' || options FROM sweep")" = \
  '1x2 {"sharding_solver":"series-parallel","memory_levels":1,"recompute_mask":1,"zero_mask":15}' ] ||
  fail "fresh sweep row"
[ "$("$sqlite" fresh.db "SELECT count(*) FROM comm_profile")" = 0 ] || fail "curves appeared"

# --- 3 ---------------------------------------------------------------------------
export FAKE_APPROF_DEVICES=2
sweep share.db --backend cuda --workers 4 --cluster 1x4 --hardware h100-sxm
says_text share.db.err "workers 4 on 2 devices: workers share devices" "share notice"
grep -q "on h100-sxm, 4 workers" share.db.err || fail "explicit --hardware/--workers"

# --- 4 ---------------------------------------------------------------------------
export FAKE_APPROF_NODEV=1
sweep auto.db --backend auto  # the notice: an explicit --backend auto (docs/reliability.md, "Backend fallback")
[ "$(grep -c "no CUDA device: fake module" auto.db.err)" = 1 ] || fail_with auto.db.err "fallback notice"
grep -q "backend model on a100-40g, 1 worker" auto.db.err || fail "fallback summary"
[ "$("$sqlite" auto.db "SELECT kind || ' ' || s.cluster_hosts || 'x' || s.cluster_gpus
  FROM sweep s JOIN hardware h ON h.id = s.hardware_id")" = "analytic 1x8" ] || fail "fallback row"
set +e
"$approf" sweep --model gpt --num-layers 2 --layers 2 --backend cuda --db nodev.db 2>nodev.err
rc=$?
set -e
[ $rc = 1 ] || fail "--backend cuda without a device: exit $rc"
says_text nodev.err "backend cuda: no CUDA device: fake module" "message"
unset FAKE_APPROF_NODEV

# --- 5 ---------------------------------------------------------------------------
if [ "$have_mpi" != 1 ] || ! command -v "$mpirun" >/dev/null; then
  echo "OK (no MPI: section 5 not run)"
  exit 0
fi
export FAKE_APPROF_DEVICES=2 APPROF_MPI_RANKS_PER_HOST=2
# Sanitizer builds: Open MPI keeps allocations to exit in components it
# dlopens (the same suppressions and settings as tests/mpi/mpi_sweep.sh).
export OMPI_MCA_mca_base_component_disable_dlclose=1 PMIX_MCA_mca_base_component_disable_dlclose=1
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}fast_unwind_on_malloc=0"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}${LSAN_OPTIONS:+:}suppressions=$(cd "$(dirname "$0")/../mpi" && pwd)/lsan-openmpi.supp:print_suppressions=0"
mpi() { "$mpirun" --allow-run-as-root --oversubscribe -x APPROF_MODULE_DIR -x ASAN_OPTIONS \
          -x LSAN_OPTIONS -x FAKE_APPROF_DEVICES -x APPROF_MPI_RANKS_PER_HOST -np 4 "$@"; }
mpi "$approf" probe --db mpi.db --max-bytes 64K --quiet >mpi-probe.out 2>mpi-probe.err ||
  { cat mpi-probe.out mpi-probe.err; fail "mpirun approf probe"; }
"$approf" hardware curves show --db mpi.db --hardware-id 1 > mpi-show.txt
for g in 1x2 2x1 2x2; do
  for c in all-reduce send-recv; do
    grep -q "^$c *$g " mpi-show.txt || fail_with mpi-show.txt "no $c $g curve"
  done
done
[ "$("$sqlite" mpi.db "SELECT inter_host_bandwidth > 0 AND inter_host_latency > 0 FROM hardware")" = 1 ] ||
  fail "inter-host figures not filled"
cp mpi.db single.db
mpi "$approf" sweep --model gpt --num-layers 2 --layers 2 --micro-batches 2 --quiet \
  --backend cuda --db mpi.db 2>mpi-sweep.err || fail_with mpi-sweep.err "mpirun sweep"
says_text mpi-sweep.err "cluster 2x2: this machine's GPUs on every mpirun host" "mpirun default cluster"
grep -q "collectives from 6 measured curves" mpi-sweep.err || fail "mpirun sweep curves"
grep -q "GEMMs in bf16 from 216 measured shapes" mpi-sweep.err || fail "mpirun sweep GEMM grid"
unset APPROF_MPI_RANKS_PER_HOST
sweep single.db --backend cuda --cluster 2x2 --workers 1
[ "$(rows mpi.db)" = "$(rows single.db)" ] || fail "mpirun sweep differs from one process"
[ "$("$sqlite" mpi.db "SELECT options FROM sweep")" = "$("$sqlite" single.db "SELECT options FROM sweep")" ] ||
  fail "options differ"
echo OK
