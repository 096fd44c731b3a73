#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# approf sweep --zero3-schedule (docs/variants.md, "ZeRO-3 overlap"), end to
# end on a 2-layer GPT with ZeRO-3 over 8 GPUs:
#  1. an unknown schedule is refused with exit 2 naming the choices; a
#     schedule with --backend cuda likewise.
#  2. fsdp2 and deepspeed say so in the summary and record
#     "zero3_schedule" in the sweep's options; serial (the default) keeps
#     the options of a sweep made before the option existed.
#  3. ZeRO-0 entries are the same under every schedule; the ZeRO-3 entries
#     (compute-bound: 64 sequences of 1024 on 8 GPUs) cost less overlapped
#     than serial.
#  4. --resume never mixes: an fsdp2 --resume next to a complete serial
#     sweep starts its own, and a serial --resume finds its own.
#  5. a spec with zero3_rank_copies = 1 (hw/cost.c): the deepspeed summary
#     says so and every ZeRO-3 entry costs more than on the plain spec; the
#     serial schedule warns that it prices no copies.
# Usage: zero3_schedule.sh APPROF SQLITE3 WORKDIR
set -euo pipefail
approf=$(realpath "$1") sqlite=$2 work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"; cd "$work" || fail "cd $work"
model=(--model gpt --num-layers 2 --hidden 1024 --heads 16 --seq-len 1024 --layers 2
       --cluster 1x8 --submesh-space manual:1x8 --logical-space data_parallel_only
       --batch 64 --micro-batches 1 --zero 0,3 --hardware a100-80g --quiet)

set +e
"$approf" sweep "${model[@]}" --zero3-schedule fsdp1 --db x.db 2>err
expect_rc 2 $? err "--zero3-schedule fsdp1"
set -e
says_text err "serial" "--zero3-schedule fsdp1"
says_text err "fsdp2" "--zero3-schedule fsdp1"
set +e
"$approf" sweep "${model[@]}" --zero3-schedule fsdp2 --backend cuda --db x.db 2>err
expect_rc 2 $? err "--zero3-schedule --backend cuda"
set -e
says_text err "analytic model only" "--zero3-schedule --backend cuda"

"$approf" sweep "${model[@]}" --db s.db 2>s.err || fail_with s.err "serial sweep"
"$approf" sweep "${model[@]}" --zero3-schedule fsdp2 --db f.db 2>f.err || fail_with f.err "fsdp2 sweep"
"$approf" sweep "${model[@]}" --zero3-schedule deepspeed --db d.db 2>d.err ||
  fail_with d.err "deepspeed sweep"
says_text f.err "--zero3-schedule fsdp2" "fsdp2 summary"
says_text d.err "--zero3-schedule deepspeed" "deepspeed summary"
if grep -q "zero3-schedule" s.err; then fail "serial summary names a schedule"; fi
[ "$("$sqlite" f.db "select options like '%\"zero3_schedule\":\"fsdp2\"%' from sweep")" = 1 ] ||
  fail "fsdp2 options: $("$sqlite" f.db "select options from sweep")"
[ "$("$sqlite" d.db "select options like '%\"zero3_schedule\":\"deepspeed\"%' from sweep")" = 1 ] ||
  fail "deepspeed options: $("$sqlite" d.db "select options from sweep")"
[ "$("$sqlite" s.db "select options like '%zero3%' from sweep")" = 0 ] ||
  fail "serial options name a schedule"

for o in f d; do
  cmp_sql="attach '$o.db' as o;
  select e.start_layer, e.end_layer, k.zero, e.phase,
    c.compute_cost = co.compute_cost, co.compute_cost < c.compute_cost
  from main.stage_entry e join main.stage_cost c on c.sweep_id = e.sweep_id and c.cost_id = e.cost_id
  join main.sweep_config k on k.sweep_id = e.sweep_id and k.config_index = e.config_index
  join o.stage_entry eo using (start_layer, end_layer, submesh_index, config_index, phase)
  join o.stage_cost co on co.sweep_id = eo.sweep_id and co.cost_id = eo.cost_id
  where c.status = 'ok' and co.status = 'ok';"
  "$sqlite" -separator ' ' s.db "$cmp_sql" > pairs.$o
  [ -s pairs.$o ] || fail "$o: no entry fits in both sweeps"
  cheaper=0
  while read -r s e z ph same less; do
    if [ "$z" = 0 ]; then
      [ "$same" = 1 ] || fail "$o: ZeRO-0 entry $s-$e phase $ph differs from serial"
    else
      [ "$less" = 1 ] || fail "$o: ZeRO-3 entry $s-$e phase $ph not cheaper than serial"
      cheaper=$((cheaper + 1))
    fi
  done < pairs.$o
  [ "$cheaper" -gt 0 ] || fail "$o: no ZeRO-3 entry compared"
done

# resume never mixes
cp s.db m.db
"$approf" sweep "${model[@]}" --zero3-schedule fsdp2 --resume --db m.db 2>m.err ||
  fail_with m.err "fsdp2 resume next to serial"
says_text m.err "no unfinished sweep with these inputs; starting one" "fsdp2 resume next to serial"
[ "$("$sqlite" m.db "select count(*) from sweep")" = 2 ] || fail "fsdp2 --resume reused the serial sweep"
"$approf" sweep "${model[@]}" --resume --db m.db 2>m2.err || fail_with m2.err "serial resume"
says_text m2.err "sweep 1 with these inputs is already complete" "serial resume finds its own"
# zero3_rank_copies: one copy per rank on each marked collective
"$approf" hardware show a100-80g > rc.spec
sed -i 's/^zero3_rank_copies = 0$/zero3_rank_copies = 1/' rc.spec
grep -qx 'zero3_rank_copies = 1' rc.spec || fail "rc.spec: no zero3_rank_copies line to set"
rc_model=("${model[@]/a100-80g/rc.spec}")
"$approf" sweep "${rc_model[@]}" --zero3-schedule deepspeed --db r.db 2>r.err ||
  fail_with r.err "deepspeed sweep with zero3_rank_copies"
says_text r.err "a copy per rank (zero3_rank_copies 1" "zero3_rank_copies summary"
if grep -q "copy per rank" d.err; then fail "plain spec's summary names the copies"; fi
more_sql="attach 'r.db' as o;
  select count(*), sum(co.compute_cost > c.compute_cost)
  from main.stage_entry e join main.stage_cost c on c.sweep_id = e.sweep_id and c.cost_id = e.cost_id
  join main.sweep_config k on k.sweep_id = e.sweep_id and k.config_index = e.config_index
  join o.stage_entry eo using (start_layer, end_layer, submesh_index, config_index, phase)
  join o.stage_cost co on co.sweep_id = eo.sweep_id and co.cost_id = eo.cost_id
  where c.status = 'ok' and co.status = 'ok' and k.zero = 3;"
read -r n more <<< "$("$sqlite" -separator ' ' d.db "$more_sql")"
[ "$n" -gt 0 ] && [ "$more" = "$n" ] || fail "zero3_rank_copies: $more of $n ZeRO-3 entries cost more"
"$approf" sweep "${rc_model[@]}" --db rs.db 2>rs.err || fail_with rs.err "serial sweep with zero3_rank_copies"
says_text rs.err "serial schedule prices them without the copies" "zero3_rank_copies under serial"
echo "ok: zero3 schedules (recorded, cheaper ZeRO-3 entries, no mixing, per-rank copies)"
