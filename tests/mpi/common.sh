# SPDX-License-Identifier: Apache-2.0
# Shared by the tests of this folder: row dumps of one sweep (every column
# but sweep_id and the 'reused' flag, which records how a process found an
# entry, not what it is) and a failure helper.
fail() { echo "FAIL: $*"; exit 1; }

# dump_entries DB SWEEP_ID
dump_entries() {
  "$sqlite" "$1" "SELECT start_layer,end_layer,submesh_index,config_index,phase,
    quote(compute_cost),peak_memory,invar_size,outvar_size,temp_buffer_size,
    available_memory,intermediate_size,initial_size,repeats,quote(spread),status,
    quote(error) FROM stage_profile WHERE sweep_id = $2 ORDER BY 1,2,3,4,5;"
}

# dump_placements DB SWEEP_ID
dump_placements() {
  "$sqlite" "$1" "SELECT start_layer,end_layer,submesh_index,config_index,role,
    tensor_index,tensor_name,shape,dtype,sharding_spec FROM placement
    WHERE sweep_id = $2 ORDER BY 1,2,3,4,5,6;"
}

# dump_sweep DB SWEEP_ID: the provenance columns and lists, not ids or times
dump_sweep() {
  "$sqlite" "$1" "SELECT s.name,m.signature,h.fingerprint,cluster_hosts,cluster_gpus,
    global_batch,micro_batches,s.num_layers,s.layer_option,submesh_space,logical_space,
    profile_mode,s.dtype,backend,s.options,quote(shard),status
    FROM sweep s JOIN model m ON m.id = s.model_id JOIN hardware h ON h.id = s.hardware_id
    WHERE s.id = $2;
    SELECT submesh_index,hosts,gpus_per_host FROM sweep_submesh WHERE sweep_id = $2 ORDER BY 1;
    SELECT submesh_index,config_index,logical_a,logical_b,quote(force_batch_dim)
    FROM sweep_config WHERE sweep_id = $2 ORDER BY 1,2;
    SELECT layer_index,op_begin,op_end,fwd_flops,bwd_flops,param_bytes FROM model_layer
    WHERE model_id = (SELECT model_id FROM sweep WHERE id = $2) ORDER BY 1;"
}

# same_sweep DB_A ID_A DB_B ID_B LABEL: equal row by row
same_sweep() {
  local w="$work/cmp"
  dump_entries "$1" "$2" >"$w.a.e"; dump_entries "$3" "$4" >"$w.b.e"
  dump_placements "$1" "$2" >"$w.a.p"; dump_placements "$3" "$4" >"$w.b.p"
  dump_sweep "$1" "$2" >"$w.a.s"; dump_sweep "$3" "$4" >"$w.b.s"
  [ -s "$w.a.e" ] || fail "$5: no entries in $1 sweep $2"
  cmp -s "$w.a.e" "$w.b.e" || { diff "$w.a.e" "$w.b.e" | head -5; fail "$5: stage_profile rows differ"; }
  cmp -s "$w.a.p" "$w.b.p" || { diff "$w.a.p" "$w.b.p" | head -5; fail "$5: placement rows differ"; }
  cmp -s "$w.a.s" "$w.b.s" || { diff "$w.a.s" "$w.b.s" | head -5; fail "$5: sweep rows differ"; }
}
