#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CLIs under valgrind memcheck: a small sweep (and its resume), list,
# show, export, import of the export, model show/export, hardware show, and
# apsolve's auto, manual, uniform and 3-D plans in text and JSON. Any
# invalid read/write, use of uninitialised memory or definite leak makes
# valgrind exit 99 and the test fail. Exit 77 (skipped) when valgrind is not
# installed or the binaries are sanitizer builds (VALGRIND given empty).
# Usage: valgrind.sh APPROF APSOLVE VALGRIND WORKDIR
set -u
approf=$1
apsolve=$2
vg=$3
work=$4
[ -n "$vg" ] || { echo "skip: no valgrind (or a sanitizer build)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
db="$work/v.db"
runs=0
. "$(dirname "$0")/../lib.sh"
check() { # WANT-RC NAME CMD...
  local want=$1 name=$2 rc
  shift 2
  "$vg" --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --track-origins=yes --quiet --log-file="$work/$name.vg" "$@" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
  if [ $rc = 99 ] || [ -s "$work/$name.vg" ]; then
    head -40 "$work/$name.vg"; fail "$name: valgrind reports errors"
  fi
  [ $rc = "$want" ] || { cat "$work/$name.err"; fail "$name: exit $rc, expected $want"; }
  runs=$((runs + 1))
}
sweep=(sweep --model gpt --num-layers 2 --hidden 64 --heads 2 --seq-len 16 --vocab 64 --batch 8
       --layers 2 --cluster 1x4 --micro-batches 2 --hardware v100-16g --backend model --db "$db")
check 0 sweep "$approf" "${sweep[@]}"
check 0 resume "$approf" "${sweep[@]}" --resume
check 0 list "$approf" list --db "$db"
check 0 show "$approf" show --db "$db"
check 0 export "$approf" export --db "$db" --format csv
cp "$work/export.out" "$work/t.csv"
check 0 import "$approf" import --db "$db" --cluster 1x4 --micro-batches 2 "$work/t.csv"
check 1 import-bad "$approf" import --db "$db" /dev/null
check 0 model-show "$approf" model show gpt --num-layers 2 --hidden 64 --heads 2 --seq-len 16 --vocab 64 --format json
check 0 model-export "$approf" model export mlp
cp "$work/model-export.out" "$work/mlp.json"
check 0 model-file "$approf" model show --model-file "$work/mlp.json" --layers 2
check 0 hardware "$approf" hardware show h100-sxm
check 2 usage "$approf" sweep --cluster 3x3
check 0 apsolve-auto "$apsolve" --db "$db" --sweep 1
check 0 apsolve-json "$apsolve" --db "$db" --sweep 1 --format json --batch 4
check 0 apsolve-manual "$apsolve" --db "$db" --sweep 1 --stage-option manual \
  --forward-stage-layer-ids '[[0],[1]]' --submesh-shapes '[(1,2),(1,2)]'
check 0 apsolve-uniform "$apsolve" --db "$db" --sweep 1 --stage-option uniform --num-stages 2 --submesh 1x2
check 0 apsolve-3d "$apsolve" --db "$db" --sweep 1 --parallel dp=2,tp=1,pp=2
check 0 apsolve-imported "$apsolve" --db "$db" --sweep 2 --no-store
check 2 apsolve-usage "$apsolve" --db "$db" --stage-option manual --forward-stage-layer-ids '[[0,' \
  --submesh-shapes '[(1,2)]'
echo "ok: $runs CLI runs under valgrind memcheck, no errors, no definite leaks"
