#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# approf sweep --shard K/N + approf merge: the merged sweep equals a
# single-process sweep row by row (entries, placements, sweep, submeshes,
# configs, layers), in composition and in individual mode (range entries
# composed after the merge), with several shards in one file and into an
# existing database; merge refuses missing, duplicated, mismatched and
# unfinished shards with exit 1, a clear message, and nothing written;
# with ZeRO stages and every variant, three shards equal one process too.
# Usage: shard_merge.sh APPROF SQLITE3 WORKDIR
set -u
approf=$1
sqlite=$2
work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"

sweep() { "$approf" sweep --backend model --quiet "$@" >/dev/null 2>>"$work/sweep.err" ||
  fail_with "$work/sweep.err" "approf sweep $*"; }
merge_ok() { "$approf" merge "$@" 2>"$work/merge.err" || fail_with "$work/merge.err" "approf merge $*"; }
# merge_refused PATTERN ARGS...: exit 1 with PATTERN in the message
merge_refused() {
  local pat=$1; shift
  "$approf" merge "$@" >/dev/null 2>"$work/refused.err"
  local rc=$?
  [ $rc = 1 ] || fail_with "$work/refused.err" "merge $* exited $rc, expected 1"
  grep -q -- "$pat" "$work/refused.err" || fail_with "$work/refused.err" "merge $*: no '$pat'"
}

# 1. composition: resnet50, 8 layers, 2x4, two shards in two files
comp=(--model resnet50 --layers 8 --cluster 2x4 --micro-batches 4)
sweep "${comp[@]}" --db "$work/single.db"
sweep "${comp[@]}" --db "$work/s0.db" --shard 0/2
sweep "${comp[@]}" --db "$work/s1.db" --shard 1/2
n0=$("$sqlite" "$work/s0.db" "SELECT count(*) FROM stage_profile")
n1=$("$sqlite" "$work/s1.db" "SELECT count(*) FROM stage_profile")
[ "$n0" -gt 0 ] && [ "$n1" -gt 0 ] || fail "a shard is empty ($n0, $n1)"
merge_ok --db "$work/merged.db" "$work/s1.db" "$work/s0.db"
says_text "$work/merge.err" "merged 2 shards into sweep 1" "summary"
same_sweep "$work/single.db" 1 "$work/merged.db" 1 "composition"
n=$("$sqlite" "$work/merged.db" "SELECT count(*) FROM stage_profile")
[ "$n" = $((n0 + n1)) ] || fail "merged has $n entries, shards $n0 + $n1"

# merging again into the same (existing) database adds a second equal sweep
merge_ok --db "$work/merged.db" "$work/s0.db" "$work/s1.db"
[ "$("$sqlite" "$work/merged.db" "SELECT count(*) FROM sweep")" = 2 ] || fail "expected 2 sweeps"
[ "$("$sqlite" "$work/merged.db" "SELECT count(*) FROM model")" = 1 ] || fail "model row duplicated"
same_sweep "$work/single.db" 1 "$work/merged.db" 2 "second merge"

# 1b. every ZeRO stage, then every variant: a stage's row is the same
# whichever other tuples a process profiles (three shards put a group's
# ZeRO-2 stage in another process than its ZeRO-0 one; the sharding ILP
# reads nothing of the variant: docs/variants.md, "Determinism across
# shards")
for space in "--zero 0,1,2,3" "--variants all"; do
  tag=${space//[^a-z0-9]/}
  # shellcheck disable=SC2086
  sweep "${comp[@]}" $space --db "$work/v$tag.db"
  for k in 0 1 2; do
    # shellcheck disable=SC2086
    sweep "${comp[@]}" $space --db "$work/v$tag-$k.db" --shard $k/3
  done
  merge_ok --db "$work/v$tag-merged.db" "$work/v$tag-0.db" "$work/v$tag-1.db" "$work/v$tag-2.db"
  same_sweep "$work/v$tag.db" 1 "$work/v$tag-merged.db" 1 "shards of $space"
done

# 2. individual mode: mlp, 3 shards, two of them in one file
ind=(--model mlp --layers 2 --cluster 1x4 --micro-batches 4 --profile-mode individual)
sweep "${ind[@]}" --db "$work/isingle.db"
sweep "${ind[@]}" --db "$work/ia.db" --shard 0/3
sweep "${ind[@]}" --db "$work/ia.db" --shard 2/3
sweep "${ind[@]}" --db "$work/ib.db" --shard 1/3
ranges=$("$sqlite" "$work/ia.db" "SELECT count(*) FROM stage_profile WHERE start_layer < end_layer")
[ "$ranges" = 0 ] || fail "a shard composed ranges on its own"
merge_ok --db "$work/imerged.db" "$work/ia.db" "$work/ib.db"
says_text "$work/merge.err" "composed" "individual summary"
ranges=$("$sqlite" "$work/imerged.db" "SELECT count(*) FROM stage_profile WHERE start_layer < end_layer")
[ "$ranges" -gt 0 ] || fail "merge composed no range entries"
same_sweep "$work/isingle.db" 1 "$work/imerged.db" 1 "individual"

# 3. refusals (nothing written)
merge_refused "shard 1/2 is missing" --db "$work/r.db" "$work/s0.db"
merge_refused "shard 1/2 is given twice" --db "$work/r.db" "$work/s0.db" "$work/s1.db" "$work/s1.db"
sweep "${comp[@]}" --micro-batches 8 --db "$work/other.db" --shard 1/2
merge_refused "differ in micro-batches" --db "$work/r.db" "$work/s0.db" "$work/other.db"
sweep "${comp[@]}" --db "$work/third.db" --shard 1/3
merge_refused "different splits" --db "$work/r.db" "$work/s0.db" "$work/third.db"
merge_refused "holds no shard sweep" --db "$work/r.db" "$work/single.db"
cp "$work/s1.db" "$work/s1i.db"
"$sqlite" "$work/s1i.db" "UPDATE sweep SET status = 'interrupted'"
merge_refused "is interrupted, not complete" --db "$work/r.db" "$work/s0.db" "$work/s1i.db"
[ ! -s "$work/r.db" ] || [ "$("$sqlite" "$work/r.db" "SELECT count(*) FROM sweep")" = 0 ] ||
  fail "a refused merge wrote a sweep"
merge_refused "is interrupted" --db "$work/merged.db" "$work/s0.db" "$work/s1i.db"
[ "$("$sqlite" "$work/merged.db" "SELECT count(*) FROM sweep")" = 2 ] ||
  fail "a refused merge changed an existing database"

# 4. usage errors exit 2
"$approf" merge "$work/s0.db" >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "merge without --db exited $rc"
"$approf" merge --db "$work/x.db" >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "merge without inputs exited $rc"
echo "ok: shard merge equals single-process sweeps; refusals checked"
