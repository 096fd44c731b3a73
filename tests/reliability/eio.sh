#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A disk that starts failing fsync (EIO, injected with an LD_PRELOAD shim)
# during a sweep. The control run counts the syncs a sweep makes (T). Then
# the sweep is run with its syncs failing from the (N+1)-th on, N = 0, 1, ...
# Every run must either exit 1 with a message that names the database and
# not be marked complete, or exit 0 complete; and the runs that fail must
# be exactly the first ones (N < N0): once a run passes, only syncs after
# the sweep's final flush failed. Those belong to the last checkpoint that
# sqlite3_close makes, which copies only the release of the sweep's owner
# row (at most three syncs: the log, the database file, the directory;
# SQLite ignores their errors, and a stale owner on this host is taken
# over by the next run). The final flush (costdb_sync) is what
# catches a failure at the end of the sweep: SQLite ignores the errors of
# its automatic checkpoints, and before it those runs exited 0.
# Usage: eio.sh APPROF SQLITE3 SHIM WORKDIR
set -u
approf=$1 sqlite=$2 shim=$3 work=$4
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
# ASan wants to come first in the library list; let the shim go before it
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
args=(sweep --model mlp --layers 2 --cluster 1x2 --batch 16 --micro-batches 2 --backend model
      --quiet)

APPROF_TEST_SYNC_LOG="$work/syncs" LD_PRELOAD="$shim" "$approf" "${args[@]}" \
  --db "$work/ok.db" >/dev/null 2>"$work/ok.err" ||
  { cat "$work/ok.err"; fail "control sweep with the shim loaded"; }
[ "$("$sqlite" "$work/ok.db" "SELECT status FROM sweep")" = complete ] || fail "control not complete"
total=$(wc -l < "$work/syncs" 2>/dev/null || echo 0)
[ "$total" -ge 1 ] || fail "the control sweep made no fsync (is the shim loaded?)"

n0=-1 flushed=0
for ((n = 0; n < total; n++)); do
  db="$work/bad$n.db"
  APPROF_TEST_EIO_AFTER=$n LD_PRELOAD="$shim" "$approf" "${args[@]}" --db "$db" \
    >/dev/null 2>"$work/bad$n.err"
  rc=$?
  status=$("$sqlite" "$db" "SELECT status FROM sweep" 2>/dev/null)
  if [ "$rc" = 0 ]; then
    [ "$status" = complete ] || fail "syncs failing after $n: exit 0 but status '$status'"
    [ "$n0" -ge 0 ] || n0=$n
    echo "ok: syncs failing after $n of $total -> exit 0, complete (only the close's syncs failed)"
    continue
  fi
  [ "$n0" -lt 0 ] || fail "syncs failing after $n: exit $rc although the run failing after $n0 passed"
  [ "$rc" = 1 ] || { cat "$work/bad$n.err"; fail "syncs failing after $n of $total: exit $rc, expected 1"; }
  grep -q "^approf: $db: " "$work/bad$n.err" ||
    { cat "$work/bad$n.err"; fail "syncs failing after $n: the message does not name the database"; }
  [ "$status" != complete ] || fail "syncs failing after $n: exit 1 but the sweep is marked complete"
  grep -q "cannot flush the database to disk" "$work/bad$n.err" && flushed=1
  echo "ok: syncs failing after $n of $total -> exit 1, $(head -1 "$work/bad$n.err" | sed "s|$work/||")"
done
[ "$flushed" = 1 ] || fail "no run was caught by the final flush"
[ "$n0" -lt 0 ] || [ $((total - n0)) -le 3 ] ||
  fail "runs pass from $n0 of $total syncs on: more than the close's three syncs unchecked"
