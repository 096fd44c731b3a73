#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The built-ins' host links (host_link_bandwidth_gbs, docs/hardware.md
# "Host link"): each built-in's figure in `approf hardware show`; apsolve's
# activation offload (--parallel ...,offload=N) pricing on a sweep of the
# built-in h100-sxm, which it refused before the built-ins had a host link;
# and a database swept before that change (simulated by the built-in's
# figures with host_link_bandwidth_gbs = 0, which is the old built-in's
# fingerprint: a figure of 0 does not join the hash): apsolve's offload
# there names the missing field, `--resume` on the built-in says why it
# starts a new sweep, and the old figures as a spec file continue the old
# sweep.
# Usage: host_link.sh APPROF APSOLVE SQLITE3 WORKDIR
set -euo pipefail
approf=$(realpath "$1") apsolve=$(realpath "$2") sq=$3 work=$4
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"; cd "$work" || fail "cd $work"

# every built-in's figure, one direction per GPU (GB/s); gtx-1080ti: none
for pair in v100-16g=15.75 v100-32g=15.75 a100-40g=31.5 a100-80g=31.5 h100-sxm=63 h200=63 \
            b200=63 gb200-nvl72=225 mi300x=63 gtx-1080ti=0; do
  name=${pair%=*} want=${pair#*=}
  "$approf" hardware show "$name" >"$name.spec" || fail "hardware show $name"
  grep -qx "host_link_bandwidth_gbs = $want" "$name.spec" ||
    fail_with "$name.spec" "$name: host_link_bandwidth_gbs is not $want"
done

sweep() { # DB HARDWARE [OPTIONS]: output into DB.out
  db=$1 hw=$2
  shift 2
  "$approf" sweep --db "$db" --model gpt --num-layers 4 --hidden 256 --heads 4 --seq-len 128 \
    --vocab 1000 --cluster 1x2 --hardware "$hw" --batch 8 --micro-batches 2 --layers 4 \
    --backend model "$@" >"$db.out" 2>&1 || fail_with "$db.out" "sweep $db on $hw"
}
offload() { # DB: apsolve's offload plan, JSON into DB.json, messages into DB.err
  "$apsolve" --db "$1" --no-store --format json --parallel dp=1,tp=2,pp=1,offload=1 \
    >"$1.json" 2>"$1.err"
}

# the built-in prices offload, with its 63 GB/s in the stored row
sweep new.db h100-sxm --quiet
offload new.db || fail_with new.db.err "offload=1 on the built-in h100-sxm"
python3 - new.db.json <<'EOF' || fail_with new.db.json "the offload plan"
import json, sys
p = json.load(open(sys.argv[1]))["plans"][0]
assert p["feasible"], p
o = p["offload"]
assert o["layers"] == 1 and o["host_bandwidth"] == 63e9 and o["freed_bytes"] > 0, o
EOF
[ "$("$sq" new.db "select json_extract(capabilities, '\$.host_link_bandwidth') from hardware")" \
  = 63000000000 ] || fail "the hardware row's host_link_bandwidth"

# a database swept before the built-ins had a host link
sed -e 's/^host_link_bandwidth_gbs = .*/host_link_bandwidth_gbs = 0/' h100-sxm.spec >old.spec
sweep old.db old.spec --quiet
offload old.db && fail_with old.db.json "offload priced without a host link"
grep -q "host_link_bandwidth_gbs" old.db.err || fail_with old.db.err "the refusal names the field"
old=$("$sq" old.db "select id from sweep")
sweep old.db h100-sxm --resume
grep -q "sweep $old has these inputs but hardware analytic:h100-sxm:" old.db.out &&
  grep -q "its figures changed" old.db.out || fail_with old.db.out "--resume on the built-in: why"
[ "$("$sq" old.db "select count(*) from sweep")" = 2 ] || fail "the old sweep kept beside the new"
sweep old.db old.spec --resume
grep -q "sweep $old with these inputs is already complete" old.db.out ||
  fail_with old.db.out "--resume with the old figures continues sweep $old"
echo "host link: ok"
