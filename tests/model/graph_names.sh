#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A database written before the Hugging Face families had zoo names of their
# own (docs/models.md, "Graph names"): its qwen3 sweep was stored under
# 'qwen2'. --resume finds the same model row (keyed by the graph's
# signature, which the name is not part of), continues the sweep, keeps the
# stored name and says so; a fresh database stores the new name.
# Usage: graph_names.sh APPROF SQLITE3
set -u
approf=$1
sqlite=$2
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/approf-names-XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/q.json" <<'JSON'
{"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 128,
 "vocab_size": 100, "max_position_embeddings": 32, "num_attention_heads": 4,
 "num_key_value_heads": 2, "head_dim": 16}
JSON
db=$tmp/x.db
sweep() { "$approf" sweep --hf-config "$tmp/q.json" --cluster 1x2 --db "$db" --batch 4 \
    --micro-batches 2 --layers 2 "$@"; }
sweep > "$tmp/out" 2> "$tmp/err" || fail "first sweep: $(cat "$tmp/err")"
[ "$("$sqlite" "$db" "SELECT name FROM model")" = qwen3 ] || fail "the model row is not named qwen3"
[ "$("$sqlite" "$db" "SELECT name FROM sweep")" = qwen3 ] || fail "the sweep is not named qwen3"
entries=$("$sqlite" "$db" "SELECT count(*) FROM stage_entry")
# what an older approf wrote, as if it had been interrupted
"$sqlite" "$db" "UPDATE model SET name = 'qwen2'; UPDATE sweep SET name = 'qwen2', status = 'interrupted';" \
    || fail "sqlite3 update"
sweep --resume > "$tmp/out" 2> "$tmp/err" || fail "resume: $(cat "$tmp/err")"
grep -q "resuming sweep 1" "$tmp/err" || fail "the old sweep was not resumed: $(cat "$tmp/err")"
grep -q "model 1 is stored as 'qwen2'.*now names it 'qwen3'" "$tmp/err" \
    || fail "no notice of the stored name: $(cat "$tmp/err")"
[ "$("$sqlite" "$db" "SELECT count(*) FROM sweep")" = 1 ] || fail "resume made a second sweep"
[ "$("$sqlite" "$db" "SELECT count(*) FROM stage_entry")" = "$entries" ] || fail "resume changed the entries"
[ "$("$sqlite" "$db" "SELECT name FROM model")" = qwen2 ] || fail "the stored model name changed"
[ "$("$sqlite" "$db" "SELECT status FROM sweep")" = complete ] || fail "the resumed sweep is not complete"
echo "graph names: ok"
