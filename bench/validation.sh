#!/usr/bin/env bash
# bench/validation.sh: price published, measured training throughputs
# (bench/validation_cases.tsv) with approf + apsolve and print predicted
# against measured seconds per iteration, the signed error and the MAPE,
# separately for the calibration rows (one GPU) and the held-out rows (several
# GPUs, one or more hosts), then the LLM runs of bench/plans.sh, split by
# the set column of bench/plans_cases.tsv (calibration | heldout) and
# summed by its family column (framework and GPU generation); a row
# bench/plans.sh could not price is named, never dropped silently.
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
#                            [--bin-size N]
# --plans-output reads a saved bench/plans.sh output instead of running it
# (it takes minutes); --markdown prints the rows as a docs/validation.md table.
# --bin-size prices the binned rows with LDDL bins of N tokens instead of
# DeepLearningExamples' 64 (N in 8, 16, ..., 512; 512: one bin, each
# micro-batch padded to its longest sample), to compare with LDDL's own
# figure of phase 2's time by bin size (docs/validation.md, "BERT phase 2
# by sequence length").
# The grad_sync column says when the measured framework reduced gradients:
# "overlapped" (PyTorch DDP's 25 MB buckets under the backward) or
# "after-backward" (DeepLearningExamples' BERT: DDP with one bucket the size
# of the GPU's memory, i.e. once the backward is done), which prices the
# case with grad_overlap = 0 (bench/framework_spec.py).
# The grad_dtype column: "f32" where the gradients are reduced in f32
# whatever the model's dtype (torch.cuda.amp's autocast keeps the ResNet-50
# runs' parameters, and so their gradients, in f32), "-" otherwise.  The
# optimizer column: "sgd" where the step is torch.optim.SGD's
# per-parameter loop (priced by its bytes and its kernels, SGD_STEP_BYTES
# and SGD_KERNELS below), "-" for the built-in count.  The ddp column:
# "copies" where PyTorch DDP copies each gradient into its bucket and back
# (DDP_COPIES below: ddp_grad_copies), "-" otherwise.
# The workload column says whether the measured program ran fixed-length
# samples ("fixed") or length-binned ones ("binned", BERT phase 2 on LDDL's
# bins of 64 tokens).  A binned row is priced as the expectation over the
# padded lengths its micro-batches take, from the sample lengths in
# bench/bert_wikipedia_lengths.tsv (one sweep per padded length); the summary
# gives each set whole and without the binned rows.
# Printed, never asserted.  See docs/validation.md.
set -u
cd "$(dirname "$0")/.." || exit 1

BUILD=""
CASES=bench/validation_cases.tsv
ONLY=""
PLANS=run
PLANS_OUT=""
MARKDOWN=0
BIN_SIZE=64
while [ $# -gt 0 ]; do
    case "$1" in
        --build) BUILD=$2; shift 2 ;;
        --cases) CASES=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --no-plans) PLANS=no; shift ;;
        --plans-output) PLANS=file; PLANS_OUT=$2; shift 2 ;;
        --markdown) MARKDOWN=1; shift ;;
        --bin-size) BIN_SIZE=${2:-}; shift; [ $# -gt 0 ] && shift ;;
        -h|--help) sed -n '2,/^set -u/{/^#/p}' "$0"; exit 0 ;;
        *) echo "validation.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
case "$BIN_SIZE" in
    8|16|32|64|128|256|512) ;;
    *) echo "validation.sh: --bin-size: '$BIN_SIZE' is not one of 8, 16, 32, 64, 128, 256, 512" >&2; exit 2 ;;
esac

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
export CASES ONLY TMP PLANS PLANS_OUT MARKDOWN BIN_SIZE
python3 - <<'PY'
import csv, json, os, re, subprocess, sys
sys.path.insert(0, "bench")
import framework_spec

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

# The optimizer column: "-" (the step priced as fused Adam's bytes, the
# built-in count) or "sgd": DeepLearningExamples' ResNet-50 steps
# torch.optim.SGD (momentum, weight decay; image_classification/
# optimizers.py get_sgd_optimizer at 7bdfc81d), whose step loops over the
# parameters (torch/optim/_functional.py sgd): d_p = grad + wd * p (reads 8,
# writes 4 bytes an f32 element), buf.mul_ (4 + 4), buf.add_(d_p) (8 + 4),
# p.add_(buf) (8 + 4); then optimizer.zero_grad() zeroes each gradient (4);
# 48 bytes.  Under AMP, GradScaler.step first unscales the f32 gradients in
# place (_amp_foreach_non_finite_check_and_unscale_: 4 + 4): 56.  Priced
# as the spec's optimizer_step_bytes (docs/validation.md, "DeepLearningExamples'
# multi-GPU rows: what eight GPUs add").
SGD_STEP_BYTES = {False: "48", True: "56"}
# The same step's kernels, each at least the spec's launch gap
# (hw/param_loop.c): in DeepLearningExamples' ResNet-50
# (image_classification/models/resnet.py at 7bdfc81d) 63 parameter tensors
# take weight decay (53 convolutions, the 4 downsample batch norms, which
# are not named "bn", and the classifier: 5 kernels with zero_grad's) and
# the 98 tensors of the 49 batch norms named "bn" do not (4): 707 kernels
# over 161 tensors.
SGD_KERNELS = {"param_step_kernels": repr((63 * 5 + 98 * 4) / 161)}
# The ddp column: "copies" where PyTorch DDP runs without
# gradient_as_bucket_view (the ResNet-50 runs' DDP(model, device_ids=[gpu])):
# each gradient copied into its bucket and back, 2 copy kernels a parameter
# tensor where the gradients are all-reduced (ddp_grad_copies,
# hw/param_loop.c); "-": none (DeepLearningExamples' BERT sets
# gradient_as_bucket_view=True).
DDP_COPIES = "2"

specs = {}
def spec_files(c):
    """(copy of case c's spec with unbounded memory and the fields its
    framework sets otherwise (framework_spec.overrides), the spec's
    available bytes)."""
    fields = dict(framework_spec.overrides(c), memory_gib="65536")
    if c.get("optimizer", "-") == "sgd":
        fields["optimizer_step_bytes"] = SGD_STEP_BYTES[c["precision"] == "AMP"]
        fields.update(SGD_KERNELS)
    if c.get("ddp", "-") == "copies":
        fields["ddp_grad_copies"] = DDP_COPIES
    path = framework_spec.spec_name(TMP, c["hardware"], fields)
    if path not in specs:
        vals = framework_spec.write_spec("validation.sh", APPROF, c["hardware"], fields, path)
        avail = (float(vals["memory_gib"]) - float(vals.get("memory_reserve_gib", "1"))) * 2**30
        specs[path] = (path, avail)
    return specs[path]

def price(c, seq=None, mlm=None):
    """(full_cost, memory needed, why not) of case c at sequence length seq
    and masked positions mlm (both from the case when None)."""
    hosts, m = int(c["hosts"]), int(c["gpus_per_host"])
    n, mbs, acc = hosts * m, int(c["mbs"]), int(c["accum"])
    batch = mbs * n * acc
    spec, avail = spec_files(c)
    db = os.path.join(TMP, c["id"] + ".db")
    cmd = [APPROF, "sweep", "--model", c["model"], "--backend", "model", "--hardware", spec,
           "--cluster", "%dx%d" % (hosts, m), "--batch", str(batch), "--micro-batches", str(acc),
           "--layers", "1", "--submesh-space", "manual:%dx%d" % (hosts, m),
           "--logical-space", "data_parallel_only", "--dtype", c["dtype"], "--variants", "alpa",
           "--db", db, "--quiet"]
    if c["preset"] != "-":
        cmd += ["--preset", c["preset"]]
    if seq is not None or c["seq"] != "-":
        cmd += ["--seq-len", str(seq) if seq is not None else c["seq"]]
    opts = c["model_options"].split() if c.get("model_options", "-") not in ("-", "", None) else []
    if mlm is not None:
        opts = [o for i, o in enumerate(opts)
                if o != "--mlm-positions" and (i == 0 or opts[i - 1] != "--mlm-positions")]
        opts += ["--mlm-positions", str(mlm)]
    cmd += opts
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
# grad_sync: when the measured framework reduced gradients (required here);
# these runs have no tensor parallelism
framework_spec.check("validation.sh", os.environ["CASES"], cases,
                     {"tp_comm": "serial", "grad_dtype": "-", "loss": "-", "grad_accum": "-"})
for line, c in enumerate(cases, start=2):
    if c.get("optimizer", "-") not in ("-", "sgd"):
        sys.exit("validation.sh: %s:%d: field 'optimizer': %r is not one of -, sgd" %
                 (os.environ["CASES"], line, c.get("optimizer")))
    if c.get("ddp", "-") not in ("-", "copies"):
        sys.exit("validation.sh: %s:%d: field 'ddp': %r is not one of -, copies" %
                 (os.environ["CASES"], line, c.get("ddp")))
if ONLY:
    cases = [c for c in cases if re.search(ONLY, c["id"])]

# Length-binned BERT phase 2 (workload "binned"; docs/validation.md, "Binned
# phase 2 priced by its length distribution").  LDDL, which feeds the
# measured runs, writes a sample of L tokens to bin (L - 1) // 64 (the last
# bin takes the rest; bin size 64 is DeepLearningExamples' phase2_bin_size);
# each micro-batch takes all its samples from one bin, chosen with
# probability proportional to the samples the bin has left and the same on
# every rank (lddl/torch/dataloader.py, Binned), and is padded to its longest
# sample rounded up to a multiple of 8 (sequence_length_alignment); a sample
# has max(1, round(0.15 L)) masked positions (static masking,
# create_masked_lm_predictions).  The sample lengths are those of
# bench/bert_wikipedia_lengths.tsv.  --bin-size sets another bin size (a
# power of two from 8, so that a bin's bounds stay multiples of ALIGN); a
# micro-batch padded to V tokens scores at most V masked positions.
LENGTHS_FILE = "bench/bert_wikipedia_lengths.tsv"
BIN_SIZE, ALIGN, MASKED_LM_RATIO = int(os.environ["BIN_SIZE"]), 8, 0.15

def read_lengths(path):
    """counts[L - 1] = samples of L tokens; exits naming the line and field."""
    counts = {}
    try:
        f = open(path)
    except OSError as e:
        sys.exit("validation.sh: %s: %s" % (path, e.strerror))
    with f:
        header = None
        for no, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            t = line.rstrip("\n").split("\t")
            if header is None:
                if t != ["length", "count"]:
                    sys.exit("validation.sh: %s:%d: expected the header 'length<TAB>count'" % (path, no))
                header = t
                continue
            if len(t) != 2:
                sys.exit("validation.sh: %s:%d: expected 2 fields, found %d" % (path, no, len(t)))
            for name, v in zip(header, t):
                if not v.isdigit():
                    sys.exit("validation.sh: %s:%d: field %s: '%s' is not a whole number" % (path, no, name, v))
            L = int(t[0])
            if L < 1 or L in counts:
                sys.exit("validation.sh: %s:%d: field length: %d is %s" %
                         (path, no, L, "a repeat" if L in counts else "below 1"))
            counts[L] = int(t[1])
    if not counts or sum(counts.values()) == 0:
        sys.exit("validation.sh: %s: no samples" % path)
    return [counts.get(L, 0) for L in range(1, max(counts) + 1)]

def binned_mix(counts, nmax, mbs):
    """[(padded length, masked positions per sequence, probability)] of one
    micro-batch of mbs samples at most nmax tokens long."""
    total, nbins, mix = sum(counts), nmax // BIN_SIZE, []
    for k in range(nbins):
        lo, hi = k * BIN_SIZE + 1, (k + 1) * BIN_SIZE if k < nbins - 1 else len(counts)
        c = counts[lo - 1:hi]
        nk = sum(c)
        if nk == 0:
            continue
        masked = sum(ci * max(1, round(MASKED_LM_RATIO * (lo + i))) for i, ci in enumerate(c)) / nk
        # P(longest of mbs samples <= L) = F(L)^mbs over the bin's lengths
        cum, prev = 0, 0.0
        for i, ci in enumerate(c):
            L = lo + i
            cum += ci
            if L % ALIGN == 0 or L == hi:
                f = (cum / nk) ** mbs
                if f > prev:
                    padded = -(-L // ALIGN) * ALIGN
                    mix.append((padded, min(padded, max(1, round(masked))), nk / total * (f - prev)))
                prev = f
    return mix

lengths = None
def price_case(c):
    """(predicted s/iter, memory needed, why not, note) of case c."""
    global lengths
    if c.get("workload", "fixed") != "binned":
        return price(c) + ("",)
    if lengths is None:
        lengths = read_lengths(LENGTHS_FILE)
    nmax = int(c["seq"])
    if len(lengths) != nmax:
        return None, None, "%s holds lengths up to %d, the case's sequence is %d" % (
            LENGTHS_FILE, len(lengths), nmax), ""
    pred, need, done = 0.0, 0, {}
    mix = binned_mix(lengths, nmax, int(c["mbs"]))
    for padded, mlm, w in mix:
        if (padded, mlm) not in done:
            done[(padded, mlm)] = price(c, padded, mlm)
        cost, nd, why = done[(padded, mlm)]
        if cost is None:
            return None, None, "at %d tokens: %s" % (padded, why), ""
        pred += w * cost
        need = max(need, nd)
    fixed = price(c)[0]
    mean = sum(w * p for p, _, w in mix)
    note = "binned: %d padded lengths priced, mean %.0f tokens; at %d tokens every step: %s s" % (
        len(done), mean, nmax, "%.4g" % fixed if fixed is not None else "n/a")
    return pred, need, "", note

rows = []
for c in cases:
    n = int(c["hosts"]) * int(c["gpus_per_host"])
    meas = int(c["mbs"]) * int(c["accum"]) * n / float(c["measured"])
    pred, need, why, note = price_case(c)
    avail = spec_files(c)[1]
    rows.append(dict(c, n=n, meas=meas, pred=pred, need=need, avail=avail, why=why, note=note))

def model_label(r):
    return r["model"] + ("-" + r["preset"] + "/" + r["seq"] if r["preset"] != "-" else "")

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
    model = model_label(r)
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
    elif r["note"] and not MARKDOWN:
        print("    " + r["note"])

# Held-out LLM runs of bench/plans.sh: its as-run estimate against its measurement.
plans_rows = []
if os.environ["PLANS"] != "no" and os.environ["PLANS_OUT"]:
    # the case list's set (calibration | heldout; a list without the column:
    # heldout) and family (the framework and GPU generation of the run)
    with open("bench/plans_cases.tsv") as f:
        case_of = {r["id"]: r for r in csv.DictReader(f, delimiter="\t")}
    unpriced = []
    with open(os.environ["PLANS_OUT"]) as f:
        for line in f:
            t = line.split()
            if len(t) >= 8 and t[0] in case_of and t[5] != "n/a":
                c = case_of[t[0]]
                plans_rows.append(dict(id=t[0], meas=float(t[4]), pred=float(t[5]), fits=t[7],
                                       source=c["source"], set=c.get("set") or "heldout",
                                       family=c.get("family") or "-"))
            elif len(t) >= 6 and t[0] in case_of:
                unpriced.append(t[0])
    print("\nbench/plans.sh LLM runs (as-run estimate): %d priced, %d not (%s)" %
          (len(plans_rows), len(unpriced), ", ".join(unpriced) or "-"))
    for r in plans_rows:
        print("  %-30s %-11s %-24s measured %8.4g  predicted %8.4g  error %+6.1f%%  fits %s" %
              (r["id"], r["set"], r["family"], r["meas"], r["pred"], 100 * err(r), r["fits"]))

print()
cal = [r for r in rows if r["set"] == "calibration"]
held = [r for r in rows if r["set"] == "heldout"]
# The lines below leave out the rows priced from a length distribution
# (workload "binned"), which the sets above include.
def fixed(rs):
    return [r for r in rs if r.get("workload", "fixed") == "fixed"]
llm_cal = [r for r in plans_rows if r["set"] == "calibration"]
llm_held = [r for r in plans_rows if r["set"] != "calibration"]
for name, rs in (("calibration (1 GPU)", cal), ("held-out DLE (multi-GPU)", held),
                 ("calibration LLM (bench/plans.sh)", llm_cal),
                 ("held-out LLM (bench/plans.sh)", llm_held),
                 ("held-out all", held + llm_held),
                 ("calibration, fixed-length", fixed(cal)),
                 ("held-out DLE, fixed-length", fixed(held)),
                 ("held-out all, fixed-length", fixed(held) + llm_held)):
    m, k = mape(rs)
    fit = [r for r in rs if r.get("need") is not None and r["need"] > r["avail"]] + \
          [r for r in rs if r.get("fits") == "no"]
    print("%-33s MAPE %s over %d rows; judged out of memory: %d" %
          (name, "%.1f%%" % m if m is not None else "n/a", k, len(fit)))

# The held-out rows by group: DeepLearningExamples by model and precision,
# the LLM runs by source (what the sections of docs/validation.md quote).
def by_group(title, rs, key):
    groups = {}
    for r in rs:
        groups.setdefault(key(r), []).append(r)
    if not groups:
        return
    print("\n" + title)
    for g, grs in groups.items():
        m, k = mape(grs)
        es = [err(r) for r in grs if err(r) is not None]
        rng = "%+.1f..%+.1f%%" % (100 * min(es), 100 * max(es)) if es else "n/a"
        oom = sum(1 for r in grs if r.get("fits") == "no" or
                  (r.get("need") is not None and r["need"] > r["avail"]))
        print("  MAPE %6s over %2d rows, errors %-15s OOM %d  %s" %
              ("%.1f%%" % m if m is not None else "n/a", k, rng, oom, g))
by_group("held-out DLE by model and precision:", held,
         lambda r: "%s %s" % (model_label(r), "AMP" if r["precision"] == "AMP" else "TF32/FP32"))
by_group("held-out LLM by family:", llm_held, lambda r: r["family"])
by_group("calibration LLM by family:", llm_cal, lambda r: r["family"])
# (a source's text up to its first ";": the llm-foundry rows name their
# model's yaml after it)
by_group("held-out LLM by source:", llm_held, lambda r: r["source"].split(";")[0])
PY
exit $?
