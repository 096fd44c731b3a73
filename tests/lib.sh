# SPDX-License-Identifier: Apache-2.0
# Helpers shared by the shell tests. Source it from a test script:
#   . "$(dirname "$0")/../lib.sh"
# Every helper fails the test (exit 1) with a message on stdout, which
# meson shows in the test log.

# fail MESSAGE...: stop the test.
fail() { echo "FAIL: $*"; exit 1; }

# fail_with FILE MESSAGE...: show FILE (a command's stderr or output, when it
# exists), then stop the test:  cmd 2>"$w/err" || fail_with "$w/err" "cmd"
fail_with() { [ -f "$1" ] && cat "$1"; shift; fail "$@"; }

# fresh_dir DIR: an empty work directory (kept after the run for inspection).
fresh_dir() { rm -rf "$1" && mkdir -p "$1" || fail "cannot create $1"; }

# temp_dir VAR: a temporary directory removed when the test exits.
temp_dir() {
  local d
  d=$(mktemp -d) || fail "mktemp"
  # shellcheck disable=SC2064
  trap "rm -rf '$d'" EXIT
  printf -v "$1" '%s' "$d"
}

# expect_rc WANT GOT ERRFILE CASE: exit status GOT must be WANT and ERRFILE
# shows no crash:  cmd 2>"$w/err"; expect_rc 2 $? "$w/err" "bad option"
expect_rc() {
  [ "$2" = "$1" ] || { cat "$3" 2>/dev/null; fail "$4: exit $2, expected $1"; }
  not_crashed "$3" "$4"
}

# not_crashed ERRFILE CASE: no sanitizer report, segfault or abort in ERRFILE.
not_crashed() {
  if grep -q "Sanitizer\|runtime error\|Segmentation\|Aborted" "$1" 2>/dev/null; then
    cat "$1"
    fail "$2: crashed"
  fi
}

# says FILE REGEX CASE: FILE holds a line matching the extended REGEX.
says() {
  grep -Eq -- "$2" "$1" || { cat "$1"; fail "$3: the output does not say '$2'"; }
}

# says_text FILE TEXT CASE: FILE holds TEXT, a fixed string (not a pattern:
# paths and messages with dots, brackets or pluses match only themselves).
says_text() {
  grep -Fq -- "$2" "$1" || { cat "$1"; fail "$3: the output does not say '$2'"; }
}

# same_file GOT WANT CASE: byte-identical files, a diff on failure.
same_file() {
  cmp -s "$1" "$2" || { diff -u "$2" "$1" | head -40; fail "$3: $1 differs from $2"; }
}

# integrity_ok SQLITE3 DB CASE: SQLite's integrity check passes.
integrity_ok() {
  [ "$("$1" "$2" "PRAGMA integrity_check")" = ok ] || fail "$3: integrity_check of $2"
}

# db_sum SQLITE3 DB: a digest of every table's rows (schema and data).
db_sum() { "$1" "$2" .dump | sha256sum | cut -d' ' -f1; }

# Row dumps of one sweep for comparisons: every column but sweep_id and the
# 'reused' flag (which records how a process found an entry, not what it
# is). They read the sqlite3 shell from $sqlite.

# dump_entries DB SWEEP_ID: its stage_profile rows.
dump_entries() {
  "$sqlite" "$1" "SELECT start_layer,end_layer,submesh_index,config_index,phase,
    quote(compute_cost),peak_memory,invar_size,outvar_size,temp_buffer_size,
    available_memory,intermediate_size,initial_size,repeats,quote(spread),status,
    quote(error) FROM stage_profile WHERE sweep_id = $2 ORDER BY 1,2,3,4,5;"
}

# dump_placements DB SWEEP_ID: its placements (through the placement view).
dump_placements() {
  "$sqlite" "$1" "SELECT start_layer,end_layer,submesh_index,config_index,role,
    tensor_index,tensor_name,shape,dtype,sharding_spec FROM placement
    WHERE sweep_id = $2 ORDER BY 1,2,3,4,5,6;"
}

# dump_sweep DB SWEEP_ID: the provenance columns and lists, not ids or times.
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

# same_sweep DB_A ID_A DB_B ID_B CASE: the two sweeps are equal row by row
# (entries, placements, provenance); the dumps are left in $work/cmp.*.
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
