#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Several sweeps writing one database at once (2 rounds by default). Each
# round starts, at the same moment, (a) two sweeps of different models, (b)
# the two shards 0/2 and 1/2 of one sweep and (c) four shards with a commit
# after every tuple (the most lock traffic), with `approf list` and `approf
# show` reading meanwhile.
# Every process must exit 0 and no "busy"/"locked" message may reach the
# user; afterwards each sweep's rows must equal those of the same sweep run
# alone (for shards: together they hold exactly the rows of the unsharded
# sweep, none twice), and the file must pass integrity_check.
# Usage: concurrent.sh APPROF SQLITE3 WORKDIR [ROUNDS]
set -u
approf=$1
sqlite=$2
work=$3
rounds=${4:-2}
rm -rf "$work"
mkdir -p "$work"
. "$(dirname "$0")/../lib.sh"
common=(--cluster 2x4 --batch 64 --micro-batches 8 --hardware v100-16g --backend model --quiet)
gpt=(sweep --model gpt --preset gpt2-small --layers 10 "${common[@]}")
bert=(sweep --model bert --preset base --layers 10 "${common[@]}")

"$approf" "${gpt[@]}" --db "$work/ref-gpt.db" 2>"$work/ref.err" >/dev/null || { cat "$work/ref.err"; fail "reference gpt"; }
"$approf" "${bert[@]}" --db "$work/ref-bert.db" 2>>"$work/ref.err" >/dev/null || { cat "$work/ref.err"; fail "reference bert"; }

cols() { # TABLE: its columns but sweep_id (and the provenance flag reused, see lib.sh)
  "$sqlite" "$work/ref-gpt.db" "SELECT group_concat(name, ', ') FROM pragma_table_info('$1')
     WHERE name NOT IN ('sweep_id', 'reused');"
}
# differ DB 'ID[,ID...]' REFDB: rows of those sweeps of DB that are not in
# the reference's sweep 1 and the other way round, plus the count difference.
differ() {
  local t c sum=0 d
  for t in stage_profile placement; do
    c=$(cols $t)
    d=$("$sqlite" "$1" "ATTACH '$3' AS r; SELECT
         (SELECT count(*) FROM (SELECT $c FROM main.$t WHERE sweep_id IN ($2)
                                EXCEPT SELECT $c FROM r.$t WHERE sweep_id = 1)) +
         (SELECT count(*) FROM (SELECT $c FROM r.$t WHERE sweep_id = 1
                                EXCEPT SELECT $c FROM main.$t WHERE sweep_id IN ($2))) +
         abs((SELECT count(*) FROM main.$t WHERE sweep_id IN ($2)) -
             (SELECT count(*) FROM r.$t WHERE sweep_id = 1));")
    sum=$((sum + d))
  done
  echo $sum
}
sweep_ids() { # DB MODEL
  "$sqlite" "$1" "SELECT group_concat(s.id) FROM sweep s JOIN model m ON m.id = s.model_id
     WHERE m.name = '$2' AND s.status = 'complete';"
}
run_all() { # NAME DB COMMAND-LINES... (one per argument, split on spaces)
  local name=$1 db=$2 pids=() rcs=() i=0 line
  shift 2
  for line in "$@"; do
    # shellcheck disable=SC2086
    "$approf" $line --db "$db" >/dev/null 2>"$work/$name.$i.err" &
    pids+=($!)
    i=$((i + 1))
  done
  # readers while the writers run
  for _ in 1 2 3; do
    "$approf" list --db "$db" >/dev/null 2>>"$work/$name.readers.err" || true
    "$approf" show --db "$db" >/dev/null 2>>"$work/$name.readers.err" || true
    sleep 0.1
  done
  i=0
  for pid in "${pids[@]}"; do
    wait "$pid" || { cat "$work/$name.$i.err"; fail "$name: process $i exited $?"; }
    i=$((i + 1))
  done
  if grep -qi "busy\|locked" "$work/$name".*.err; then
    grep -i "busy\|locked" "$work/$name".*.err | head -3
    fail "$name: a busy/locked error reached the user"
  fi
  ic=$("$sqlite" "$db" "PRAGMA integrity_check;")
  [ "$ic" = ok ] || fail "$name: integrity_check: $ic"
}

g="${gpt[*]}"
b="${bert[*]}"
runs=0
for r in $(seq 1 "$rounds"); do
  db="$work/models-$r.db"
  run_all "models-$r" "$db" "$g" "$b"
  [ "$(differ "$db" "$(sweep_ids "$db" gpt)" "$work/ref-gpt.db")" = 0 ] || fail "round $r: gpt rows differ"
  [ "$(differ "$db" "$(sweep_ids "$db" bert)" "$work/ref-bert.db")" = 0 ] || fail "round $r: bert rows differ"
  runs=$((runs + 2))

  db="$work/shards-$r.db"
  run_all "shards-$r" "$db" "$g --shard 0/2" "$g --shard 1/2"
  ids=$(sweep_ids "$db" gpt)
  [ "$(echo "$ids" | tr ',' '\n' | wc -l)" = 2 ] || fail "round $r: expected 2 shard sweeps, got '$ids'"
  [ "$(differ "$db" "$ids" "$work/ref-gpt.db")" = 0 ] || fail "round $r: shards 0/2 + 1/2 differ from the whole sweep"
  runs=$((runs + 2))

  db="$work/shards4-$r.db"
  run_all "shards4-$r" "$db" "$g --shard 0/4 --commit-every 1" "$g --shard 1/4 --commit-every 1" \
    "$g --shard 2/4 --commit-every 1" "$g --shard 3/4 --commit-every 1"
  ids=$(sweep_ids "$db" gpt)
  [ "$(echo "$ids" | tr ',' '\n' | wc -l)" = 4 ] || fail "round $r: expected 4 shard sweeps, got '$ids'"
  [ "$(differ "$db" "$ids" "$work/ref-gpt.db")" = 0 ] || fail "round $r: 4 shards differ from the whole sweep"
  runs=$((runs + 4))
done
echo "ok: $rounds rounds, $runs concurrent sweep processes (2 models, 2 shards, 4 shards with commit-every 1 per round), all complete, rows identical, no busy error"
