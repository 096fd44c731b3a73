# SPDX-License-Identifier: Apache-2.0
# Helpers shared by the shell tests. Source it from a test script:
#   . "$(dirname "$0")/../lib.sh"
# Every helper fails the test (exit 1) with a message on stdout, which
# meson shows in the test log.

# fail MESSAGE...: stop the test.
fail() { echo "FAIL: $*"; exit 1; }

# fresh_dir DIR: an empty work directory (kept after the run for inspection).
fresh_dir() { rm -rf "$1" && mkdir -p "$1" || fail "cannot create $1"; }

# temp_dir VAR: a temporary directory removed when the test exits.
temp_dir() {
  local d
  d=$(mktemp -d) || fail "mktemp"
  # shellcheck disable=SC2064
  trap "rm -rf '$d'" EXIT
  printf -v "$1" '%s' "$d"
}

# expect_rc WANT GOT ERRFILE CASE: exit status GOT must be WANT and ERRFILE
# shows no crash:  cmd 2>"$w/err"; expect_rc 2 $? "$w/err" "bad option"
expect_rc() {
  [ "$2" = "$1" ] || { cat "$3" 2>/dev/null; fail "$4: exit $2, expected $1"; }
  not_crashed "$3" "$4"
}

# not_crashed ERRFILE CASE: no sanitizer report, segfault or abort in ERRFILE.
not_crashed() {
  if grep -q "Sanitizer\|runtime error\|Segmentation\|Aborted" "$1" 2>/dev/null; then
    cat "$1"
    fail "$2: crashed"
  fi
}

# says FILE REGEX CASE: FILE holds a line matching the extended REGEX.
says() {
  grep -Eq -- "$2" "$1" || { cat "$1"; fail "$3: the output does not say '$2'"; }
}

# same_file GOT WANT CASE: byte-identical files, a diff on failure.
same_file() {
  cmp -s "$1" "$2" || { diff -u "$2" "$1" | head -40; fail "$3: $1 differs from $2"; }
}

# integrity_ok SQLITE3 DB CASE: SQLite's integrity check passes.
integrity_ok() {
  [ "$("$1" "$2" "PRAGMA integrity_check")" = ok ] || fail "$3: integrity_check of $2"
}

# db_sum SQLITE3 DB: a digest of every table's rows (schema and data).
db_sum() { "$1" "$2" .dump | sha256sum | cut -d' ' -f1; }
