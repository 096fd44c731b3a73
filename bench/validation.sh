#!/usr/bin/env bash
# bench/validation.sh: price published, measured training throughputs
# (bench/validation_cases.tsv) with approf + apsolve and print predicted
# against measured seconds per iteration, the signed error and the MAPE,
# separately for the calibration rows (one GPU) and the held-out rows (several
# GPUs, one or more hosts), then the held-out LLM runs of bench/plans.sh.
#
# A case: model (resnet50, bert --preset P --seq-len S, plus the sweep's model
# options of the measured program in model_options), hardware spec, hosts x
# GPUs per host, per-GPU micro-batch mbs, gradient-accumulation steps accum,
# dtype (f32: what the framework runs for "FP32"/"TF32"; f16: AMP), the
# measured throughput in samples/s.  One iteration = accum micro-batches of
# mbs samples on every GPU followed by one gradient synchronisation:
#   measured s/iter = mbs * accum * GPUs / throughput.
# Priced as data parallelism over every GPU: approf sweep --layers 1
# --submesh-space manual:HxM --logical-space data_parallel_only --batch
# mbs*GPUs*accum --micro-batches accum, then apsolve --parallel
# dp=GPUs,tp=1,pp=1 --global-batch ...; the prediction is apsolve's
# full_cost (compute + gradient sync + optimizer).  Time is priced on a copy
# of the spec with unbounded memory (so a run approf judges out of memory
# still gets a time); "fits" compares apsolve's memory_needed with the real
# spec's available memory.
#
# Usage: bench/validation.sh [--build DIR] [--cases FILE] [--only REGEX]
#                            [--no-plans | --plans-output FILE] [--markdown]
# --plans-output reads a saved bench/plans.sh output instead of running it
# (it takes minutes); --markdown prints the rows as a docs/validation.md table.
# The workload column says whether the measured program ran the fixed-length
# samples approf prices ("fixed") or length-binned ones ("binned", BERT phase
# 2); the summary gives each set whole and without the binned rows.
# Printed, never asserted.  See docs/validation.md.
set -u
cd "$(dirname "$0")/.." || exit 1

BUILD=""
CASES=bench/validation_cases.tsv
ONLY=""
PLANS=run
PLANS_OUT=""
MARKDOWN=0
while [ $# -gt 0 ]; do
    case "$1" in
        --build) BUILD=$2; shift 2 ;;
        --cases) CASES=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --no-plans) PLANS=no; shift ;;
        --plans-output) PLANS=file; PLANS_OUT=$2; shift 2 ;;
        --markdown) MARKDOWN=1; shift ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
        *) echo "validation.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

if [ -z "$BUILD" ]; then
    for d in build-plans build build-*; do
        if [ -x "$d/profiler/cli/approf" ] && [ -x "$d/solver/apsolve" ]; then BUILD=$d; break; fi
    done
fi
if [ -z "$BUILD" ]; then
    echo "validation.sh: no build with approf and apsolve; building build-plans (release)" >&2
    { [ -d build-plans ] || meson setup build-plans -Dbuildtype=release >&2; } && ninja -C build-plans >&2 || exit 1
    BUILD=build-plans
fi
command -v python3 >/dev/null || { echo "validation.sh: python3 is required" >&2; exit 1; }

TMP=$(mktemp -d /tmp/approf-validation.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT
if [ "$PLANS" = run ]; then
    echo "validation.sh: running bench/plans.sh --build $BUILD (minutes) ..." >&2
    bench/plans.sh --build "$BUILD" > "$TMP/plans.out" 2>&1
    PLANS_OUT="$TMP/plans.out"
fi

export APPROF="$BUILD/profiler/cli/approf" APSOLVE="$BUILD/solver/apsolve"
export CASES ONLY TMP PLANS PLANS_OUT MARKDOWN
python3 - <<'PY'
import csv, json, os, re, subprocess, sys

APPROF, APSOLVE, TMP = os.environ["APPROF"], os.environ["APSOLVE"], os.environ["TMP"]
ONLY, MARKDOWN = os.environ["ONLY"], os.environ["MARKDOWN"] == "1"

def run(cmd, timeout=300):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %gs" % timeout

def first_line(err):
    for line in err.splitlines():
        if line.strip() and not line.startswith("Try "):
            return line.strip()
    return "(no message)"

specs = {}
def spec_files(name):
    """(unbounded-memory copy of the spec, the spec's available bytes)."""
    if name in specs:
        return specs[name]
    rc, out, err = run([APPROF, "hardware", "show", name])
    if rc:
        sys.exit("validation.sh: approf hardware show %s: %s" % (name, first_line(err)))
    vals = dict(l.split(" = ", 1) for l in out.splitlines() if " = " in l and not l.startswith("#"))
    avail = (float(vals["memory_gib"]) - float(vals.get("memory_reserve_gib", "1"))) * 2**30
    path = os.path.join(TMP, name + "-unbounded.spec")
    with open(path, "w") as f:
        for l in out.splitlines():
            if l.startswith("memory_gib = "):
                l = "memory_gib = 65536"
            f.write(l + "\n")
    specs[name] = (path, avail)
    return specs[name]

def price(c):
    hosts, m = int(c["hosts"]), int(c["gpus_per_host"])
    n, mbs, acc = hosts * m, int(c["mbs"]), int(c["accum"])
    batch = mbs * n * acc
    spec, avail = spec_files(c["hardware"])
    db = os.path.join(TMP, c["id"] + ".db")
    cmd = [APPROF, "sweep", "--model", c["model"], "--backend", "model", "--hardware", spec,
           "--cluster", "%dx%d" % (hosts, m), "--batch", str(batch), "--micro-batches", str(acc),
           "--layers", "1", "--submesh-space", "manual:%dx%d" % (hosts, m),
           "--logical-space", "data_parallel_only", "--dtype", c["dtype"], "--db", db, "--quiet"]
    if c["preset"] != "-":
        cmd += ["--preset", c["preset"]]
    if c["seq"] != "-":
        cmd += ["--seq-len", c["seq"]]
    if c.get("model_options", "-") not in ("-", "", None):
        cmd += c["model_options"].split()
    rc, _, err = run(cmd)
    if rc:
        return None, None, "sweep failed: " + first_line(err)
    rc, out, err = run([APSOLVE, "--db", db, "--parallel", "dp=%d,tp=1,pp=1" % n,
                        "--global-batch", str(batch), "--format", "json", "--no-store", "--quiet"])
    try:
        plans = json.loads(out).get("plans", [])
    except ValueError:
        plans = []
    p = next((p for p in plans if p.get("kind") == "3d"), None)
    if p is None or p.get("full_cost") is None:
        return None, None, "apsolve: " + first_line(err)
    need = max(s.get("memory_needed", 0) for s in p["stages"])
    return p["full_cost"], need, ""

with open(os.environ["CASES"]) as f:
    cases = [r for r in csv.DictReader(f, delimiter="\t")]
if ONLY:
    cases = [c for c in cases if re.search(ONLY, c["id"])]

rows = []
for c in cases:
    n = int(c["hosts"]) * int(c["gpus_per_host"])
    meas = int(c["mbs"]) * int(c["accum"]) * n / float(c["measured"])
    pred, need, why = price(c)
    avail = spec_files(c["hardware"])[1]
    rows.append(dict(c, n=n, meas=meas, pred=pred, need=need, avail=avail, why=why))

def err(r):
    return (r["pred"] - r["meas"]) / r["meas"] if r["pred"] is not None else None

def mape(rs):
    e = [abs(err(r)) for r in rs if err(r) is not None]
    return (100 * sum(e) / len(e), len(e)) if e else (None, 0)

def gib(x):
    return "%.1f" % (x / 2**30) if x is not None else "n/a"

print("approf: %s  apsolve: %s" % (APPROF, APSOLVE))
print("s/iter measured = mbs*accum*GPUs/throughput; error = (predicted-measured)/measured\n")
if MARKDOWN:
    print("| case | set | model | GPU | GPUs | mbs x accum | precision | measured | measured s/iter "
          "| predicted s/iter | error | needs GiB / has | workload | source |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
else:
    fmt = "%-26s %-11s %-9s %-9s %5s %9s %5s %10s %9s %9s %7s %13s"
    print(fmt % ("case", "set", "model", "hardware", "GPUs", "mbs*acc", "prec", "measured",
                 "meas s", "pred s", "error", "GiB need/has"))
for r in rows:
    e = err(r)
    es = "%+.1f%%" % (100 * e) if e is not None else "n/a"
    ps = "%.4g" % r["pred"] if r["pred"] is not None else "n/a"
    mem = "%s/%s%s" % (gib(r["need"]), gib(r["avail"]),
                       "" if r["need"] is None else (" ok" if r["need"] <= r["avail"] else " OOM"))
    model = r["model"] + ("-" + r["preset"] + "/" + r["seq"] if r["preset"] != "-" else "")
    if MARKDOWN:
        print("| %s | %s | %s | %s | %d | %s x %s | %s | %s %s | %.4g | %s | %s | %s | %s | %s |" % (
            r["id"], r["set"], model, r["hardware"], r["n"], r["mbs"], r["accum"], r["precision"],
            r["measured"], r["unit"], r["meas"], ps, es, mem, r.get("workload", "fixed"),
            r["source"]))
    else:
        print(fmt % (r["id"], r["set"], model, r["hardware"], r["n"], r["mbs"] + "*" + r["accum"],
                     r["precision"], r["measured"] + " " + r["unit"].split("/")[0],
                     "%.4g" % r["meas"], ps, es, mem))
    if r["why"]:
        print("    n/a: " + r["why"])

# Held-out LLM runs of bench/plans.sh: its as-run estimate against its measurement.
plans_rows = []
if os.environ["PLANS"] != "no" and os.environ["PLANS_OUT"]:
    ids = set()
    with open("bench/plans_cases.tsv") as f:
        ids = {r["id"] for r in csv.DictReader(f, delimiter="\t")}
    with open(os.environ["PLANS_OUT"]) as f:
        for line in f:
            t = line.split()
            if len(t) >= 8 and t[0] in ids and t[5] != "n/a":
                plans_rows.append(dict(id=t[0], meas=float(t[4]), pred=float(t[5]), fits=t[7]))
    print("\nbench/plans.sh held-out LLM runs (as-run estimate): %d priced" % len(plans_rows))
    for r in plans_rows:
        print("  %-26s measured %8.4g  predicted %8.4g  error %+6.1f%%  fits %s" %
              (r["id"], r["meas"], r["pred"], 100 * err(r), r["fits"]))

print()
cal = [r for r in rows if r["set"] == "calibration"]
held = [r for r in rows if r["set"] == "heldout"]
# Rows whose measured workload is not the fixed-length one approf prices
# (workload "binned": BERT phase 2 on sequences binned by length, most
# shorter than 512) are in the sets above and left out of the lines below.
def fixed(rs):
    return [r for r in rs if r.get("workload", "fixed") == "fixed"]
for name, rs in (("calibration (1 GPU)", cal), ("held-out DLE (multi-GPU)", held),
                 ("held-out LLM (bench/plans.sh)", plans_rows),
                 ("held-out all", held + plans_rows),
                 ("calibration, fixed-length", fixed(cal)),
                 ("held-out DLE, fixed-length", fixed(held)),
                 ("held-out all, fixed-length", fixed(held) + plans_rows)):
    m, k = mape(rs)
    fit = [r for r in rs if r.get("need") is not None and r["need"] > r["avail"]] + \
          [r for r in rs if r.get("fits") == "no"]
    print("%-31s MAPE %s over %d rows; judged out of memory: %d" %
          (name, "%.1f%%" % m if m is not None else "n/a", k, len(fit)))
PY
exit $?
