#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The newcomer's path (issue "One plan, one truth", item 4): for each model,
# the plan `approf sweep` + `apsolve` give with default options only, beside
# the best plan the tools find with the whole space (every variant and the
# micro-batch sizes 2^k that divide the global batch), both estimated with
# the full estimate; and a plain data-parallel plan for reference. Printed,
# never asserted.
# Usage: bench/newcomer.sh [BUILD_DIR] [MODEL ...]
#   models: resnet50 swin bert-large gpt3-6.7b llama-3-8b (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
[ -d "$dir" ] || meson setup "$dir" --buildtype=release >/dev/null
ninja -C "$dir" profiler/cli/approf solver/apsolve >/dev/null || exit 1
approf=$dir/profiler/cli/approf
apsolve=$dir/solver/apsolve
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet50 swin bert-large gpt3-6.7b llama-3-8b)

args_of() { # the model options of a bench name
  case $1 in
    resnet50) echo "--model resnet50" ;;
    swin) echo "--model swin" ;;
    bert-large) echo "--model bert --preset large" ;;
    gpt3-6.7b) echo "--model gpt --preset gpt3-6.7b" ;;
    llama-3-8b) echo "--model llama --preset llama-3-8b" ;;
    *) return 1 ;;
  esac
}
# one line: layout, micro-batches, objective, full estimate, memory need of the fullest stage
summary() {
  python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    print("no plan"); sys.exit(0)
st = d["stages"]
lay = " | ".join("%d-%d (%d,%d)->(%d,%d) m%d %s z%d" % (s["layers"][0], s["layers"][-1],
      s["submesh"][0], s["submesh"][1], s["logical_mesh"][0], s["logical_mesh"][1],
      s["memory_level"], s["recompute"], s["zero"]) for s in st)
need = max(s.get("memory_needed", 0) for s in st) / 2**30
print("%d stage(s) [%s]; B=%d x mbs %s; %s; objective %.4g s; full %.4g s; most memory %.1f GB" % (
      len(st), lay, d["micro_batches"], d.get("micro_batch_size"), d.get("schedule", "1f1b"),
      d["total_cost"], d.get("full_cost") or float("nan"), need))'
}
echo "== the newcomer's path: default options vs the whole space =="
for m in "${models[@]}"; do
  margs=$(args_of "$m") || { echo "$m: unknown bench model"; continue; }
  hw=
  [ "$m" = llama-3-8b ] && hw="--hardware h100-sxm"
  # shellcheck disable=SC2086
  gb=$("$approf" model show ${margs#--model } 2>/dev/null | sed -n "s/.* batch \([0-9]*\) .*/\1/p" | head -1)
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$approf" sweep $margs $hw --db "$tmp/$m-default.db" --quiet >/dev/null 2>"$tmp/err" ||
    { echo "$m: default sweep failed: $(tail -1 "$tmp/err")"; continue; }
  t1=$(date +%s.%N)
  def=$("$apsolve" --db "$tmp/$m-default.db" --format json --no-store --quiet 2>/dev/null | summary)
  sizes=$(python3 -c "
g = int('${gb:-0}' or 0)
print(','.join(str(g // b) for b in (1, 2, 4, 8, 16, 32) if g and g % b == 0))")
  [ -n "$sizes" ] || { echo "$m: cannot read the model's global batch"; continue; }
  # shellcheck disable=SC2086
  "$approf" sweep $margs $hw --db "$tmp/$m-all.db" --quiet --variants all \
    --micro-batch-sizes "$sizes" >/dev/null 2>"$tmp/err" ||
    { echo "$m: full sweep failed: $(tail -1 "$tmp/err")"; continue; }
  t2=$(date +%s.%N)
  best=$("$apsolve" --db "$tmp/$m-all.db" --format json --no-store --quiet 2>/dev/null | summary)
  printf '%s (global batch %s)\n' "$m" "${gb:-?}"
  printf '  defaults   (sweep %5.1f s): %s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$def"
  printf '  whole space(sweep %5.1f s, micro-batch sizes %s): %s\n' \
    "$(awk -v a="$t1" -v b="$t2" 'BEGIN{print b-a}')" "$sizes" "$best"
done
