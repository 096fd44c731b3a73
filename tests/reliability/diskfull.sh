#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Write failures: a sweep that runs out of space (a file-size limit, and a
# full filesystem when a small tmpfs can be mounted) or meets a read-only
# database (an immutable file, an immutable directory, a read-only mount, or
# plain permissions when not root) must stop with exit 1 and a message that
# names the database and the cause, leave a file that passes
# integrity_check, and — once the space or permission is back — resume to
# exactly the rows of an uninterrupted sweep. A read-only file must not
# change at all (same checksum). Cases the machine cannot set up (no mount,
# no chattr) print "skip:" with the reason; the file-size limit case always
# runs.
# Usage: diskfull.sh APPROF SQLITE3 WORKDIR
set -u
approf=$1
sqlite=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
args=(sweep --model gpt --preset gpt2-small --layers 12 --cluster 2x4 --batch 64
      --micro-batches 8 --hardware v100-16g --backend model --quiet --commit-every 8)
mounted=()
immutable=()
cleanup() {
  for f in "${immutable[@]}"; do chattr -i "$f" 2>/dev/null; done
  for m in "${mounted[@]}"; do umount "$m" 2>/dev/null; done
}
trap cleanup EXIT
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
ran=0

"$approf" "${args[@]}" --db "$work/ref.db" >/dev/null 2>"$work/ref.err" ||
  { cat "$work/ref.err"; fail "reference sweep"; }

# Expects exit 1 and a one-line cause naming the database; $3: regex of the cause.
expect_failure() { # RC ERRFILE REGEX CASE DB
  [ "$1" = 1 ] || { cat "$2"; fail "$4: exit $1, expected 1"; }
  grep -q "^approf: .*$5" "$2" || { cat "$2"; fail "$4: the message does not name $5"; }
  grep -Eqi "$3" "$2" || { cat "$2"; fail "$4: the message does not say '$3'"; }
  grep -q "Sanitizer\|runtime error\|Segmentation\|Aborted" "$2" && { cat "$2"; fail "$4: crashed"; }
  return 0
}

integrity() { # DB CASE
  local ic
  ic=$("$sqlite" "$1" "PRAGMA integrity_check;" 2>&1)
  [ "$ic" = ok ] || fail "$2: integrity_check: $ic"
}

# 1. File-size limit (RLIMIT_FSIZE, honoured by root too). SIGXFSZ is
#    ignored so the write fails with EFBIG instead of killing the process.
db="$work/fsize.db"
( trap '' XFSZ; ulimit -f 2048; exec "$approf" "${args[@]}" --db "$db" ) >/dev/null 2>"$work/fsize.err"
rc=$?
expect_failure $rc "$work/fsize.err" "disk|full|space|I/O|write|large" "file-size limit" "$db"
integrity "$db" "file-size limit"
n=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile;")
"$approf" "${args[@]}" --db "$db" --resume >/dev/null 2>>"$work/fsize.err" ||
  { cat "$work/fsize.err"; fail "file-size limit: resume"; }
same_as_ref "$db" "$work/ref.db" "file-size limit"
echo "ok: file-size limit: exit 1, '$(grep -m1 '^approf:' "$work/fsize.err" | cut -c1-140)'; $n entries kept; resumed to identical rows"
ran=$((ran + 1))

# 2. A full filesystem: a 1 MiB tmpfs.
mnt="$work/small-fs"
mkdir -p "$mnt"
if mount -t tmpfs -o size=1m tmpfs "$mnt" 2>/dev/null; then
  mounted+=("$mnt")
  db="$mnt/full.db"
  "$approf" "${args[@]}" --db "$db" >/dev/null 2>"$work/full.err"
  rc=$?
  expect_failure $rc "$work/full.err" "full" "full filesystem" "$db"
  integrity "$db" "full filesystem"
  n=$("$sqlite" "$db" "SELECT count(*) FROM stage_profile;")
  mount -o remount,size=64m "$mnt" || fail "remount"
  "$approf" "${args[@]}" --db "$db" --resume >/dev/null 2>>"$work/full.err" ||
    { cat "$work/full.err"; fail "full filesystem: resume"; }
  same_as_ref "$db" "$work/ref.db" "full filesystem"
  echo "ok: full filesystem: exit 1, '$(grep -m1 '^approf:' "$work/full.err" | cut -c1-140)'; $n entries kept; resumed to identical rows"
  ran=$((ran + 1))

  # 3. A read-only mount (root cannot write through it either).
  cp "$work/ref.db" "$mnt/ro.db"
  if mount -o remount,ro "$mnt" 2>/dev/null; then
    db="$mnt/ro.db"
    sum=$(cksum <"$db")
    "$approf" "${args[@]}" --db "$db" --resume >/dev/null 2>"$work/romount.err"
    rc=$?
    expect_failure $rc "$work/romount.err" "read-only|readonly|unable to open|permission" "read-only mount" "$db"
    [ "$(cksum <"$db")" = "$sum" ] || fail "read-only mount: the file changed"
    # Reading needs the WAL index (-shm), which cannot be created on a
    # read-only mount: show reports it as an error, it must not crash.
    "$approf" show --db "$db" >/dev/null 2>"$work/romount-show.err"
    src=$?
    [ $src = 0 ] || expect_failure $src "$work/romount-show.err" "unable to open|read-only|readonly" "show on a read-only mount" "$db"
    echo "ok: read-only mount: sweep exit 1, '$(grep -m1 '^approf:' "$work/romount.err" | cut -c1-140)'; file unchanged; show exit $src"
    ran=$((ran + 1))
  else
    echo "skip: read-only mount (remount,ro refused)"
  fi
else
  echo "skip: full filesystem and read-only mount (cannot mount a tmpfs here)"
fi

# 4. A read-only database file: an immutable file (root) or mode 0444 (others).
db="$work/ro.db"
cp "$work/ref.db" "$db"
"$approf" "${args[@]}" --db "$work/half.db" --layers 8 >/dev/null 2>&1 # another sweep to import
"$approf" export --db "$work/half.db" >"$work/half.csv" 2>/dev/null
how=""
if [ "$(id -u)" != 0 ]; then
  chmod 0444 "$db" && how="mode 0444"
elif chattr +i "$db" 2>/dev/null; then
  immutable+=("$db")
  how="chattr +i"
fi
if [ -n "$how" ]; then
  sum=$(cksum <"$db")
  "$approf" "${args[@]}" --db "$db" --resume >/dev/null 2>"$work/rofile.err"
  rc=$?
  expect_failure $rc "$work/rofile.err" "read-only|readonly|permission" "read-only file ($how)" "$db"
  "$approf" import --db "$db" "$work/half.csv" >/dev/null 2>"$work/roimport.err"
  rc=$?
  expect_failure $rc "$work/roimport.err" "read-only|readonly|permission" "import into a read-only file ($how)" "$db"
  "$approf" show --db "$db" >/dev/null 2>"$work/roshow.err" ||
    { cat "$work/roshow.err"; fail "read-only file ($how): show"; }
  [ "$(cksum <"$db")" = "$sum" ] || fail "read-only file ($how): the file changed"
  integrity "$db" "read-only file"
  echo "ok: read-only file ($how): sweep and import exit 1, '$(grep -m1 '^approf:' "$work/rofile.err" | cut -c1-140)'; show works; file unchanged"
  ran=$((ran + 1))
else
  echo "skip: read-only file (running as root and chattr +i is not supported here)"
fi

# 5. A read-only directory for a new database (no -wal/-shm can be created).
dir="$work/rodir"
mkdir -p "$dir"
how=""
if [ "$(id -u)" != 0 ]; then
  chmod 0555 "$dir" && how="mode 0555"
elif chattr +i "$dir" 2>/dev/null; then
  immutable+=("$dir")
  how="chattr +i"
fi
if [ -n "$how" ]; then
  "$approf" "${args[@]}" --db "$dir/new.db" >/dev/null 2>"$work/rodir.err"
  rc=$?
  expect_failure $rc "$work/rodir.err" "read-only|readonly|permission|cannot open|denied" "read-only directory ($how)" "$dir/new.db"
  [ ! -e "$dir/new.db" ] || fail "read-only directory: a file appeared"
  echo "ok: read-only directory ($how): exit 1, '$(grep -m1 '^approf:' "$work/rodir.err" | cut -c1-140)'"
  ran=$((ran + 1))
else
  echo "skip: read-only directory (running as root and chattr +i is not supported here)"
fi
echo "ok: $ran write-failure cases passed"
