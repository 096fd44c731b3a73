#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a cost row of stage_cost (schema 15) would take under candidate
# encodings for a schema 16 (issue 38; docs/performance.md "Cost rows:
# where the bytes are"). Works on a copy of DB with the sqlite3 shell only;
# each encoding is a table with stage_cost's key, built from the rows as
# they are, measured in pages (dbstat) after VACUUM. Printed, never asserted.
# Usage: [ENC_INTERN=1] bench/cost_row_encodings.sh DB [SQLITE3]
set -eu
DB=${1:?database}; SQ=${2:-sqlite3}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cp "$DB" "$T/c.db"
# the columns as schema 15 stores them; the variants below change only what
# their comment says (NULL: the value follows from the rule)
cols="sweep_id, cost_id, compute_cost, peak_memory, invar_size, outvar_size, temp_buffer_size,
 available_memory, intermediate_size, initial_size, repeats, spread, status, error_id,
 apply_cost, wgrad_cost"
code="CASE status WHEN 'ok' THEN 0 WHEN 'oom' THEN 1 WHEN 'failed' THEN 2 WHEN 'timeout' THEN 3
 WHEN 'skipped' THEN 4 ELSE status END"
peak="CASE WHEN peak_memory = invar_size + outvar_size + temp_buffer_size THEN NULL ELSE peak_memory END"
prev() { echo "CASE WHEN $1 = lag($1) OVER (PARTITION BY sweep_id ORDER BY cost_id) THEN NULL ELSE $1 END"; }
mk() { # name select-list [type of apply_cost's column]
  "$SQ" "$T/c.db" "CREATE TABLE $1 (sweep_id INTEGER, cost_id INTEGER, c3 REAL, c4 INTEGER,
    c5 INTEGER, c6 INTEGER, c7 INTEGER, c8 INTEGER, c9 INTEGER, c10 INTEGER, c11 INTEGER,
    c12 REAL, c13 INTEGER, c14 INTEGER, c15 ${3:-REAL}, c16 REAL,
    PRIMARY KEY (sweep_id, cost_id)) WITHOUT ROWID;
    INSERT INTO $1 SELECT $2 FROM stage_cost ORDER BY sweep_id, cost_id;"
}
# e0: as stored (a copy with stage_cost's types, so that every variant is built
# the same way; status, INTEGER here, keeps its text)
mk e0 "$cols"
# e1: status as an integer code (0 ok, 1 oom, 2 failed, 3 timeout, 4 skipped)
mk e1 "${cols/status,/$code,}"
# e2: e1, and peak_memory NULL where it is invar + outvar + temp (nothing donated)
c2=${cols/status,/$code,}; c2=${c2/peak_memory,/$peak,}
mk e2 "$c2"
# e3: e2, and intermediate_size, initial_size NULL where they equal the previous
# cost row's of the sweep (by cost_id)
c3=${c2/intermediate_size,/$(prev intermediate_size),}; c3=${c3/initial_size,/$(prev initial_size),}
mk e3 "$c3"
# e4: e3, and apply_cost the same way (unknown would need another mark than NULL)
c4=${c3/apply_cost,/$(prev apply_cost),}
mk e4 "$c4"
# i1 (with ENC_INTERN=1; slow on large files): interning, for comparison: outvar, temp, intermediate, initial and
# apply_cost as ids of a side table of distinct values (id INTEGER PRIMARY
# KEY, value UNIQUE), ids by first use
if [ "${ENC_INTERN:-0}" = 1 ]; then
"$SQ" "$T/c.db" "CREATE TABLE v (id INTEGER PRIMARY KEY, value UNIQUE);
  INSERT OR IGNORE INTO v (value) SELECT x FROM (
    SELECT outvar_size x, cost_id k, 1 o FROM stage_cost UNION ALL SELECT temp_buffer_size, cost_id, 2 FROM stage_cost
    UNION ALL SELECT intermediate_size, cost_id, 3 FROM stage_cost UNION ALL SELECT initial_size, cost_id, 4 FROM stage_cost
    UNION ALL SELECT apply_cost + 0.0, cost_id, 5 FROM stage_cost WHERE apply_cost IS NOT NULL) ORDER BY k, o;"
iv() { echo "(SELECT id FROM v WHERE value = $1)"; }
ci=$cols
for c in outvar_size temp_buffer_size intermediate_size initial_size; do ci=${ci/$c,/$(iv $c),}; done
ci=${ci/apply_cost,/$(iv "apply_cost + 0.0"),}
mk i1 "$ci" INTEGER
fi
"$SQ" "$T/c.db" "VACUUM"
"$SQ" "$T/c.db" "SELECT printf('%-6s %10d bytes %6.1f a row', name, sum(pgsize),
    sum(pgsize) * 1.0 / (SELECT count(*) FROM stage_cost)) FROM dbstat
  WHERE name IN ('stage_cost', 'e0', 'e1', 'e2', 'e3', 'e4', 'i1', 'v', 'sqlite_autoindex_v_1')
  GROUP BY name ORDER BY name;
  SELECT printf('rows %d, file %d bytes after VACUUM', (SELECT count(*) FROM stage_cost),
    (SELECT page_count * page_size FROM pragma_page_count, pragma_page_size));"
