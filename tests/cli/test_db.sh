#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Golden-file and exit-code tests of approf list/show/export/import.
# Usage: test_db.sh APPROF DATA_DIR
# Imports data/small.csv into a fresh database, compares `approf show` and
# `approf export` with the committed golden files, checks that export ->
# import -> export is byte-identical, that usage errors exit 2 with the help
# hint, and that a bad CSV exits 1 naming FILE:LINE:COLUMN and imports nothing.
set -u
approf=$1
data=$2
. "$(dirname "$0")/../lib.sh"
# (run by sh: temp_dir needs bash, so the directory is made here)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/approf-cli-XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

# expect CODE NAME -- COMMAND...: runs COMMAND, stdout to $tmp/out, stderr to
# $tmp/err; the exit status must be CODE, without a crash.
expect() {
    want=$1; name=$2; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    expect_rc "$want" $? "$tmp/err" "$name"
}

db=$tmp/t.db
csv=$data/small.csv

# import prints the new sweep id.
if expect 0 import -- "$approf" import --db "$db" --cluster 1x2 --micro-batches 4 --batch 32 "$csv"; then
    [ "$(cat "$tmp/out")" = "1" ] || fail "import: printed '$(cat "$tmp/out")', wanted 1"
    says_text "$tmp/err" "imported 14 entries" "import message"
fi

# show and export: their text is golden (tests/golden/cases/approf-show,
# approf-export); here --sweep 1 equals the default, --output equals
# stdout, and a round trip through import is byte-identical.
expect 0 show -- "$approf" show --db "$db" && cp "$tmp/out" "$tmp/show"
expect 0 "show --sweep" -- "$approf" show --db "$db" --sweep 1 && same_file "$tmp/out" "$tmp/show" "show --sweep 1"
expect 0 export -- "$approf" export --db "$db" --format csv && cp "$tmp/out" "$tmp/export"
expect 0 "export --output" -- "$approf" export --db "$db" --sweep 1 --output "$tmp/e1.csv" &&
    same_file "$tmp/e1.csv" "$tmp/export" "export --output"
# what the CSV leaves out is said: the import that restores cluster and batch
says_text "$tmp/err" "'approf import --cluster 1x2 --batch 32 --micro-batches 4' restores" \
    "export names the import options"
expect 0 "re-import" -- "$approf" import --db "$db" --quiet "$tmp/e1.csv" &&
    { [ "$(cat "$tmp/out")" = "2" ] || fail "re-import printed '$(cat "$tmp/out")'"; }
[ -s "$tmp/err" ] && fail "import --quiet wrote to stderr"
expect 0 "export 2" -- "$approf" export --db "$db" --sweep 2 && same_file "$tmp/out" "$tmp/export" "round trip"

# list: provenance of both sweeps.
if expect 0 list -- "$approf" list --db "$db" --format csv; then
    [ "$(wc -l <"$tmp/out")" -eq 3 ] || fail "list: wanted a header and 2 rows"
    says_text "$tmp/out" "id,name,model,hardware,dtype,shard,cluster,batch,micro_batches,layers,backend,status,entries,started" "list header"
    says_text "$tmp/out" "1,small.csv,-,-,f32,,1x2,32,4,2,import,imported,14," "list row 1"
    says_text "$tmp/out" "2,e1.csv,-,-,f32,,1x2,1,1,2,import,imported,14," "list row 2"
fi
expect 0 "list text" -- "$approf" list --db "$db" && says_text "$tmp/out" "small.csv" "list text"
# the text table gives the micro-batch count and size: 4 of 8 for batch 32
says_text "$tmp/out" " 4 of 8 " "list text micro-batches"
expect 0 "list text columns" -- "$approf" list --db "$db" &&
    says_text "$tmp/out" "hardware         dtype shard cluster" "list text header"

# list --format csv quotes names (RFC 4180): a comma, a quote or a newline
# in a name does not shift the columns.
qdb=$tmp/q.db
expect 0 "import odd name" -- "$approf" import --db "$qdb" --name 'a,b"c
d' "$csv"
if expect 0 "list quoted" -- "$approf" list --db "$qdb" --format csv; then
    python3 - "$tmp/out" <<'PY' || fail "list csv: not 14 columns or the name changed"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert len(rows) == 2 and all(len(r) == 14 for r in rows), rows
assert rows[1][1] == 'a,b"c\nd', rows[1][1]
assert rows[1][0] == "1" and rows[1][6] == "1x2", rows[1]
PY
fi
expect 0 "list text odd name" -- "$approf" list --db "$qdb" &&
    { [ "$(wc -l <"$tmp/out")" -eq 2 ] || fail "list text: a newline in a name broke the row"; }

# Standard output that cannot be written: exit 1 with a message.
if [ -w /dev/full ]; then
    for args in "list --db $db" "list --db $db --format csv" "show --db $db" "export --db $db"; do
        # shellcheck disable=SC2086
        "$approf" $args >/dev/full 2>"$tmp/err"
        expect_rc 1 $? "$tmp/err" "$args > /dev/full"
        says_text "$tmp/err" "approf: write error on standard output: No space left on device" "$args > /dev/full"
    done
    # every other command that prints: the program's help and version, the
    # zoo, a model, a command's help, a sweep (exit 0 before)
    for args in "--help" "--version" "models" "model show mlp" "model export mlp" "list --help" "merge --help" \
                "sweep --model mlp --layers 2 --cluster 1x2 --backend model --db $tmp/full.db"; do
        # shellcheck disable=SC2086
        "$approf" $args >/dev/full 2>"$tmp/err"
        expect_rc 1 $? "$tmp/err" "$args > /dev/full"
        says_text "$tmp/err" "approf: write error on standard output: No space left on device" "$args > /dev/full"
    done
fi

# export --output: a symbolic link there is refused and its target kept; the
# file is replaced whole (renamed into place).
echo precious >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/link.csv"
expect 1 "export through a symlink" -- "$approf" export --db "$db" --output "$tmp/link.csv" &&
    says_text "$tmp/err" "approf: $tmp/link.csv: is a symbolic link" "symlink message"
[ "$(cat "$tmp/victim")" = precious ] || fail "export wrote through a symbolic link"
# model export -o: the same refusal (it followed the link and overwrote
# the target), and a whole file in place
ln -s "$tmp/victim" "$tmp/link.json"
expect 1 "model export through a symlink" -- "$approf" model export mlp -o "$tmp/link.json" &&
    says_text "$tmp/err" "approf: $tmp/link.json: is a symbolic link" "model export symlink message"
[ "$(cat "$tmp/victim")" = precious ] || fail "model export wrote through a symbolic link"
echo old >"$tmp/m.json"
expect 0 "model export over a file" -- "$approf" model export mlp -o "$tmp/m.json" &&
    grep -q '"name"' "$tmp/m.json" || fail "model export -o: $(head -c 200 "$tmp/m.json")"
echo old >"$tmp/e3.csv"
expect 0 "export over a file" -- "$approf" export --db "$db" --output "$tmp/e3.csv" &&
    same_file "$tmp/e3.csv" "$tmp/export" "export over a file"
ls -A "$tmp" | grep -q '\.tmp$' && fail "export left a temporary file"

# merge refuses shard sweeps with a malformed shard text or an entry past
# the sweep's layers, naming the row (both were merged, exit 0)
if command -v sqlite3 >/dev/null; then
    for k in 0 1; do
        expect 0 "shard $k/2" -- "$approf" sweep --model mlp --layers 2 --cluster 1x2 --backend model \
            --shard $k/2 --db "$tmp/s$k.db" --quiet
    done
    cp "$tmp/s0.db" "$tmp/bad0.db"
    sqlite3 "$tmp/bad0.db" "UPDATE sweep SET shard = ' +0/2'"
    expect 1 "merge of shard ' +0/2'" -- "$approf" merge --db "$tmp/m1.db" "$tmp/bad0.db" "$tmp/s1.db" &&
        says_text "$tmp/err" "table sweep, row (id=1): column shard = ' +0/2' is not K/N" "merge shard message"
    cp "$tmp/s0.db" "$tmp/bad1.db"
    sqlite3 "$tmp/bad1.db" "UPDATE stage_entry SET end_layer = 7 WHERE start_layer = 1 AND phase = 0"
    expect 1 "merge of end_layer 7" -- "$approf" merge --db "$tmp/m2.db" "$tmp/bad1.db" "$tmp/s1.db" &&
        says_text "$tmp/err" "column end_layer = 7 is past the sweep's 2 layers" "merge end_layer message"
    [ -e "$tmp/m1.db" ] && [ "$(sqlite3 "$tmp/m1.db" "SELECT count(*) FROM sweep")" != 0 ] &&
        fail "a refused merge wrote a sweep"
    expect 0 "merge of good shards" -- "$approf" merge --db "$tmp/m3.db" "$tmp/s0.db" "$tmp/s1.db"
fi

# A bad CSV: exit 1, FILE:LINE:COLUMN and the field, nothing imported.
expect 1 "bad csv" -- "$approf" import --db "$db" "$data/bad.csv" &&
    says_text "$tmp/err" "approf: $data/bad.csv:4:8: field 'peak_memory': -807403520 is negative" "bad csv message"
[ -s "$tmp/out" ] && fail "bad csv: printed to stdout"
expect 0 "list after bad" -- "$approf" list --db "$db" --format csv &&
    { [ "$(wc -l <"$tmp/out")" -eq 3 ] || fail "bad csv: a sweep was added"; }

# Runtime failures: exit 1.
expect 1 "no such sweep" -- "$approf" show --db "$db" --sweep 99 && says_text "$tmp/err" "no sweep 99" "no such sweep"
expect 1 "missing db" -- "$approf" show --db "$tmp/none.db" && says_text "$tmp/err" "none.db: no such file" "missing db"
[ -e "$tmp/none.db" ] && fail "show created a database"
printf 'not a database at all, just text\n' >"$tmp/text.db"
expect 1 "not a db" -- "$approf" list --db "$tmp/text.db" && says_text "$tmp/err" "not an approf database" "not a db"
# Files that are not databases are named as such, not "disk I/O error" or
# "schema 0 needs an upgrade".
mkdir "$tmp/dir.db"
: >"$tmp/empty.db"
expect 1 "a directory" -- "$approf" list --db "$tmp/dir.db" && says_text "$tmp/err" "is a directory" "a directory"
expect 1 "a directory, sweep" -- "$approf" sweep --db "$tmp/dir.db" --model mlp --layers 2 --backend model --quiet &&
    says_text "$tmp/err" "is a directory" "a directory, sweep"
expect 1 "a device" -- "$approf" list --db /dev/null && says_text "$tmp/err" "not a regular file" "a device"
expect 1 "an empty file" -- "$approf" list --db "$tmp/empty.db" && says_text "$tmp/err" "an empty file" "an empty file"
[ -s "$tmp/empty.db" ] && fail "reading an empty file wrote to it"
expect 1 "missing csv" -- "$approf" import --db "$db" "$tmp/none.csv"
expect 1 "empty db" -- "$approf" import --db "$tmp/e.db" "$tmp/text.db"

# Usage errors: exit 2 with the hint on stderr, nothing on stdout.
for args in "show" "list --bogus" "export --db $db --format json" "import --db $db" \
            "import --db $db --cluster 3y2 $csv" "import --db $db --micro-batches 0 $csv" \
            "show --db $db --sweep abc" "list --db $db extra" "show --db" \
            "sweep --db $tmp/u.db --model gpt --mlm-positions 20" \
            "sweep --db $tmp/u.db --model bert --seq-len 128 --mlm-positions 200" \
            "sweep --db $tmp/u.db --model resnet50 --dropout 0.1" \
            "sweep --db $tmp/u.db --model bert --dropout 1.5" "model show bert --mlm-positions 999" \
            "sweep --db $tmp/u.db --model mlp --batch 10 --micro-batches 3" \
            "sweep --db $tmp/u.db --model gpt --micro-batches 3"; do
    # shellcheck disable=SC2086
    expect 2 "usage: $args" -- "$approf" $args && {
        cmd=${args%% *}
        says_text "$tmp/err" "Try 'approf $cmd --help'" "usage hint: $args"
        [ -s "$tmp/out" ] && fail "usage: $args printed to stdout"
    }
done
[ -e "$tmp/u.db" ] && fail "a refused sweep created its database"
for cmd in list show export import; do
    expect 0 "$cmd --help" -- "$approf" "$cmd" --help && says_text "$tmp/out" "Usage: approf $cmd" "$cmd --help"
done

echo "all approf db checks passed"
