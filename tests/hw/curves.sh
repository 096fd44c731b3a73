#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measured communication curves end to end: approf hardware curves import
# of nccl-tests outputs, show, and sweeps priced with them.
#  1. Curves generated from the spec's own model (NCCL's tuning model for
#     all-reduce, all-gather, reduce-scatter; sampled at its kinks, so that
#     linear interpolation reproduces it) give a sweep equal to the
#     plain sweep entry by entry (relative 1e-9): the curves are looked up
#     for the right collective and group shape, inside and across hosts.
#  2. The same curves three times slower change every entry that has a
#     collective and none that has not.
#  3. A bad file among good ones: exit 1, FILE:LINE and the field named,
#     the database byte for byte as it was.
#  4. Provenance: the sweep's options carry the curves' hash; --resume of an
#     equal sweep finds it complete, new curves start a new sweep.
# Usage: curves.sh APPROF SQLITE3 WORKDIR
set -euo pipefail
approf=$(realpath "$1") sqlite=$2 work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"; cd "$work" || fail "cd $work"

# nccl-tests style output (2.x column layout) of one collective over an
# HxG group, time = SCALE x the h100-sxm model: the link (approf_link_bandwidth:
# the spec's links, multi-rail hosts and bus efficiency, read from `approf
# hardware show h100-sxm`) and, for all-reduce, all-gather and
# reduce-scatter, NCCL v2.21.5-1's tuning model as docs/nccl-tuning.md
# writes it down (its own copy here, the oracle), else the ring formula.
# The model is affine in bytes between its kinks (where the fastest
# (algorithm, protocol) changes, and the tree's correction factor steps at
# 64 B x 2^k), so the sizes are the powers of two plus both sides of every
# kink: linear interpolation then reproduces it. NPTS gets the number of
# points written.
"$approf" hardware show h100-sxm > h100.spec
gen() { # gen COLL BINARY H G SCALE FILE
  python3 - "$@" <<'PY'
import math, sys
coll, binary, H, G, scale, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
spec = dict(l.split(" = ", 1) for l in open("h100.spec").read().splitlines()
            if " = " in l and not l.startswith("#"))
num = lambda k: float(spec.get(k, "0").strip('"'))
n = H * G
cross = H > 1
intra, M = num("intra_host_bandwidth_gbs") * 1e9, int(num("gpus_per_host"))
if not cross:
    bw = intra
elif num("nics_per_host") > 0 and num("nic_bandwidth_gbs") > 0:
    bw = num("nics_per_host") * num("nic_bandwidth_gbs") * 1e9 * min(G, M) / M
    if G > 1 and bw > intra:
        bw = intra
else:
    bw = num("inter_host_bandwidth_gbs") * 1e9
if num("bus_efficiency") > 0:
    bw *= num("bus_efficiency")
lat_in, lat_out = num("intra_host_latency_us"), num("inter_host_latency_us")
nodes = H if cross else 1
# NCCL v2.21.5-1, src/graph/tuning.cc: [tree, ring][LL, LL128, Simple], us
base = [[6.8, 14.0, 0.0], [6.6, 14.0, 8.4]]
nvl = [[0.6, 1.25, 28.0], [0.6, 1.9, 3.4]]
pci = [[1.0, 1.9, 28.0], [1.0, 2.5, 5.7]]
net = [[5.0, 8.5, 28.0], [2.7, 4.0, 14.0]]
corr = [[1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1, 1, 1, 1],
        [1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1, 1],
        [.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9]]
nvlink = abs(lat_in - 3.4) <= abs(lat_in - 5.7)
hwi = nvl if nvlink else pci
def lat(a, p):
    li = lat_in if (a, p) == (1, 2) else hwi[a][p]
    lo = lat_out if (a, p) == (1, 2) else net[a][p]
    if a == 1:
        st, ist = (2 * (n - 1), 2 * nodes if nodes > 1 else 0) if coll == "all-reduce" else (n - 1, nodes - 1)
        if nodes > 1:
            li = max(li, 3.0 if p == 2 else 1.0)
        return base[a][p] + (st - ist) * li + ist * lo
    return base[a][p] + 2 * ((n // nodes - 1) * li + (nodes.bit_length() - 1) * lo)
def busbw(a, p):
    if a == 0 and coll != "all-reduce":
        return 0
    if p == 1 and not nvlink:
        return 0
    if a == 1:
        return bw * (0.5 if p == 0 else (0.7 if n / nodes < 2 else 0.92) if p == 1 else 1.0)
    b = bw * 0.92
    return b / 3.8 if p == 0 else b * (7 / 9 if nodes == 1 else 120 / 128) if p == 1 else b
def pair(a, p, b):  # seconds, or None where NCCL does not run the pair
    w = busbw(a, p)
    if w <= 0:
        return None
    w *= (n / (2 * (n - 1)) if coll == "all-reduce" else n / (n - 1)) if a == 1 else 0.5
    k = max(b // 64, 1).bit_length() - 1
    if a == 0 and k < 23:
        w *= corr[p][k]
    return lat(a, p) * 1e-6 + b / w
pairs = [(a, p) for a in (0, 1) for p in (0, 1, 2)]
def t(b):
    if coll in ("all-reduce", "all-gather", "reduce-scatter"):
        return scale * min(x for x in (pair(a, p, b) for a, p in pairs) if x is not None)
    if coll == "all-to-all": tr, st = (n - 1.0) / (n * n) * b, n - 1.0
    else: tr, st = b, 1.0
    lt = (lat_out if cross else lat_in) * 1e-6
    return scale * (tr / bw + st * lt)
sizes = {1 << k for k in range(33)}
if coll in ("all-reduce", "all-gather", "reduce-scatter"):
    edges = [1] + [64 << k for k in range(1, 24)] + [1 << 32]
    for lo, hi in zip(edges, edges[1:]):
        sizes.update((lo, hi - 1))
        live = [(a, p) for a, p in pairs if pair(a, p, lo) is not None]
        for i, x in enumerate(live):
            for y in live[i + 1:]:
                ta, tb = pair(*x, lo), pair(*y, lo)
                sa, sb = (pair(*x, hi - 1) - ta) / (hi - 1 - lo), (pair(*y, hi - 1) - tb) / (hi - 1 - lo)
                if sa != sb:
                    c = lo + (tb - ta) / (sa - sb)
                    if lo < c < hi - 1:
                        sizes.update((math.floor(c), math.ceil(c)))
with open(path, "w") as f:
    f.write("# nThread 1 nGpus %d minBytes 1 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20\n#\n# Using devices\n" % G)
    for r in range(n):
        f.write("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] NVIDIA H100 80GB HBM3\n" % (r, 1000 + r, "node%d" % (r // G), r % G, r % G + 7))
    f.write("#\n# Collective test starting: %s\n" % binary)
    f.write("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
    f.write("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
    for b in sorted(sizes):
        us = t(b) * 1e6
        f.write("%12d  %12d     float     sum      -1  %.17g  %6.2f  %6.2f      0  %.17g  %6.2f  %6.2f      0\n" % (b, max(b // 4, 1), us, b / us / 1e3, b / us / 1e3, us, b / us / 1e3, b / us / 1e3))
    f.write("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n#\n")
with open("npts", "a") as f:
    f.write("%d\n" % len(sizes))
PY
}
set_of() { # set_of SCALE DIR
  mkdir -p "$2"
  for g in "1 2" "1 4" "1 8" "2 1" "2 2" "2 4" "2 8"; do
    set -- "$1" "$2" $g
    gen all-reduce all_reduce_perf $3 $4 "$1" "$2/ar-$3x$4.log"
    gen all-gather all_gather_perf $3 $4 "$1" "$2/ag-$3x$4.log"
    gen reduce-scatter reduce_scatter_perf $3 $4 "$1" "$2/rs-$3x$4.log"
    gen all-to-all alltoall_perf $3 $4 "$1" "$2/a2a-$3x$4.log"
  done
}
rm -f npts
set_of 1 same
npts=$(awk '{s += $1} END {print s}' npts)
set_of 3 slow

sweep() { # sweep DB [more options]
  local db=$1; shift
  "$approf" sweep --model gpt --num-layers 4 --layers 4 --cluster 2x8 --micro-batches 4 \
    --hardware h100-sxm --db "$db" --quiet "$@" 2>"$db.err" || fail_with "$db.err" "sweep $db"
}
cmp_entries() { # cmp_entries DB_A DB_B -> "equal differing nocoll_changed total"
  "$sqlite" "$1" "ATTACH '$2' AS b;
    SELECT sum(abs(x.compute_cost - y.compute_cost) <= 1e-9 * y.compute_cost),
           sum(abs(x.compute_cost - y.compute_cost) > 1e-9 * y.compute_cost),
           count(*)
    FROM stage_profile x JOIN b.stage_profile y
      USING (start_layer, end_layer, submesh_index, config_index, phase)
    WHERE x.status = 'ok' AND y.status = 'ok' AND x.sweep_id = 1 AND y.sweep_id = 1;"
}

# --- 1. alpha-beta curves reproduce the alpha-beta sweep ------------------------
sweep plain.db
"$approf" hardware curves import same/*.log --db same.db --hardware h100-sxm 2>import.err ||
  fail_with import.err "import"
grep -q "stored on hardware" import.err || fail "import says nothing: $(cat import.err)"
"$approf" hardware curves show --db same.db --hardware h100-sxm > show.txt
[ "$(grep -c '^all-' show.txt)" = 21 ] || fail_with show.txt "show: expected 21 all-* curves"
grep -q '^all-to-all *2x8 *f32 *33 ' show.txt || fail_with show.txt "show: all-to-all 2x8 line"
"$approf" hardware curves show --db same.db --hardware h100-sxm --format json > show.json
[ "$(grep -c '"collective"' show.json)" = "$npts" ] || fail "show json: expected $npts points"
sweep same.db
says_text same.db.err "28 measured curves" "the sweep did not report its curves"
read -r equal differ total <<<"$(cmp_entries same.db plain.db | tr '|' ' ')"
[ "$total" -gt 100 ] || fail "too few entries compared ($total)"
[ "$differ" = 0 ] || fail "alpha-beta curves changed $differ of $total entries"
echo "alpha-beta curves: $equal of $total entries equal"

# --- 2. slower curves change exactly the entries with collectives ---------------
"$approf" hardware curves import slow/*.log --db slow.db --hardware h100-sxm 2>/dev/null
sweep slow.db
read -r equal differ total <<<"$(cmp_entries slow.db plain.db | tr '|' ' ')"
[ "$differ" -gt 0 ] || fail "3x slower curves changed nothing"
# entries of single-device submeshes have no collective: unchanged
same1=$("$sqlite" slow.db "ATTACH 'plain.db' AS b; SELECT count(*) FROM stage_profile x
  JOIN b.stage_profile y USING (start_layer, end_layer, submesh_index, config_index, phase)
  JOIN sweep_submesh s ON s.sweep_id = x.sweep_id AND s.submesh_index = x.submesh_index
  WHERE s.hosts * s.gpus_per_host = 1 AND x.compute_cost <> y.compute_cost;")
[ "$same1" = 0 ] || fail "$same1 single-device entries changed"
# The sharding ILP minimises forward + backward, so one phase may get
# faster when collectives get dearer (another layout); their sum may not.
slower=$("$sqlite" slow.db "ATTACH 'plain.db' AS b; SELECT count(*) FROM (
  SELECT sum(x.compute_cost) AS xs, sum(y.compute_cost) AS ys FROM stage_profile x
  JOIN b.stage_profile y USING (start_layer, end_layer, submesh_index, config_index, phase)
  WHERE x.status = 'ok' AND y.status = 'ok' AND x.sweep_id = 1 AND y.sweep_id = 1
  GROUP BY start_layer, end_layer, submesh_index, config_index)
  WHERE xs < ys * (1 - 1e-12);")
[ "$slower" = 0 ] || fail "$slower entries (forward + backward) got faster with slower curves"
echo "3x curves: $differ of $total entries changed"

# --- 3. bad input changes nothing ------------------------------------------------
cp slow.db before.db
sed '20s/^\( *[0-9]* *[0-9]* *float *sum *-1 *\)[0-9.e+-]*/\1fast/' same/ar-1x8.log > bad.log
set +e
"$approf" hardware curves import same/ag-1x8.log bad.log --db slow.db --hardware h100-sxm 2>bad.err
rc=$?
set -e
[ $rc = 1 ] || fail "bad file: exit $rc, expected 1"
says_text bad.err "bad.log:20: field time: 'fast'" "bad file message"
same_file slow.db before.db "a failed import changed the database"
set +e
"$approf" hardware curves import same/ag-1x8.log --db slow.db --hardware-id 99 2>bad.err; rc=$?
"$approf" hardware curves import --db slow.db 2>/dev/null; rc2=$?
"$approf" hardware curves import same/ag-1x8.log --group 8 --db slow.db 2>/dev/null; rc3=$?
set -e
[ $rc = 1 ] && grep -q "no hardware row 99" bad.err || fail "unknown row: exit $rc $(cat bad.err)"
[ $rc2 = 2 ] || fail "import without files: exit $rc2"
[ $rc3 = 1 ] || fail "bad --group: exit $rc3"
same_file slow.db before.db "failed imports changed the database"

# --- 4. provenance ---------------------------------------------------------------
opts=$("$sqlite" slow.db "SELECT options FROM sweep")
case $opts in *'"comm_curves":"'*) ;; *) fail "options lack the curves: $opts";; esac
case $("$sqlite" plain.db "SELECT options FROM sweep") in *comm_curves*) fail "plain sweep names curves";; esac
sweep slow.db --resume
says_text slow.db.err "already complete" "resume did not find the sweep"
"$approf" hardware curves import same/ar-1x8.log --db slow.db --hardware h100-sxm 2>/dev/null
sweep slow.db --resume
says_text slow.db.err "starting one" "new curves resumed the old sweep"
[ "$("$sqlite" slow.db 'SELECT count(*) FROM sweep')" = 2 ] || fail "expected a second sweep"

# --- 5. shards priced with curves merge into one sweep, curves included ----------
"$approf" hardware curves import slow/*.log --db tmpl.db --hardware h100-sxm 2>/dev/null
cp tmpl.db s0.db; cp tmpl.db s1.db
sweep s0.db --shard 0/2
sweep s1.db --shard 1/2
"$approf" merge --db merged.db s0.db s1.db 2>merge.err || fail_with merge.err "merge"
read -r equal differ total <<<"$(cmp_entries merged.db slow.db | tr '|' ' ')"
[ "$differ" = 0 ] && [ "$total" -gt 100 ] || fail "merged shards differ: $differ of $total"
"$approf" hardware curves show --db merged.db --hardware h100-sxm > merged-show.txt
"$approf" hardware curves show --db tmpl.db --hardware h100-sxm > tmpl-show.txt
same_file merged-show.txt tmpl-show.txt "merge did not carry the curves"
echo "OK"
