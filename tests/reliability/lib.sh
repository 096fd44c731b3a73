# SPDX-License-Identifier: Apache-2.0
# Shared by the reliability scripts (sourced): row-by-row comparison of two
# cost databases inside SQLite. Callers set $sqlite and source tests/lib.sh
# (fail()) first.

# Every column that holds a result. stage_profile.reused is left out on
# purpose: it records that an entry was copied from an identical range
# computed earlier in the same process, and a resumed process starts with an
# empty cache, so it recomputes (bit-identical values) what an uninterrupted
# run copied. All other columns must match exactly (REALs compared as
# doubles, no rounding).
cols_of() {
  case $1 in
    stage_profile) echo "sweep_id, start_layer, end_layer, submesh_index, config_index, phase,
      compute_cost, peak_memory, invar_size, outvar_size, temp_buffer_size, available_memory,
      intermediate_size, initial_size, repeats, spread, status, error" ;;
    *) echo "*" ;;
  esac
}

# rows_differ DB REFDB TABLE: prints the number of rows that are in one and
# not the other, plus the difference of the row counts (0: identical).
rows_differ() {
  local c
  c=$(cols_of "$3")
  "$sqlite" "$1" "ATTACH '$2' AS r; SELECT
     (SELECT count(*) FROM (SELECT $c FROM main.$3 EXCEPT SELECT $c FROM r.$3)) +
     (SELECT count(*) FROM (SELECT $c FROM r.$3 EXCEPT SELECT $c FROM main.$3)) +
     abs((SELECT count(*) FROM main.$3) - (SELECT count(*) FROM r.$3));"
}

# same_as_ref DB REFDB WHAT: fails unless stage_profile, placement,
# sweep_submesh and sweep_config are identical row by row.
same_as_ref() {
  local t d n
  for t in stage_profile placement sweep_submesh sweep_config; do
    n=$("$sqlite" "$2" "SELECT count(*) FROM $t;")
    [ "$n" -gt 0 ] || fail "$3: the reference has no $t rows"
    d=$(rows_differ "$1" "$2" "$t")
    [ "$d" = 0 ] || fail "$3: $t differs from the reference ($d rows)"
  done
}
