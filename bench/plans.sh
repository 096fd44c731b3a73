#!/usr/bin/env bash
# bench/plans.sh: price published large-model training runs (bench/plans_cases.tsv)
# with approf + apsolve and compare with the iteration time that was measured.
#
# For every case: one analytic sweep (approf sweep --backend model) restricted
# to what the case needs -- the real model sizes (layers, hidden, heads, seq,
# vocab), a few approf layers (a multiple of pp), the cluster of the run
# (GPUs/g hosts x g, g the spec's gpus_per_host: 4 on a GB200 tray), the manual submesh space {S/2, S, 2S} around the stage
# submesh S = dp*tp of the run, every logical mesh, batch = the global batch and
# micro-batches = global batch / (mbs * dp) -- into a temporary database; then
#   apsolve --parallel dp=..,tp=..,pp=..,sp=..,zero=..,recompute=..,mbs=..[,vpp=..]
#           --global-batch G                      (the case as it ran)
#   apsolve --parallel dp=..,tp=..,pp=..            (3-D layout only)
# both with --format json; each also gives apsolve's auto plan.  Options that
# apsolve (or approf) rejects are reported as "n/a: <reason>", never fatal.
#
# Usage: bench/plans.sh [--build DIR] [--cases FILE] [--only REGEX] [--keep DIR]
#                       [--sweep-timeout S] [--budget S]
# The grad_sync column says when the measured framework reduced gradients:
# "after-backward" (once the last micro-batch's backward is done) prices the
# case on a copy of its spec with grad_overlap = 0, "overlapped" and "-" on
# the built-in (gradient buckets reduced under the backward); tp_comm
# "overlapped" (tensor-parallel collectives pipelined with the GEMMs) on a
# copy with tp_comm_overlap = 1 and Transformer Engine's userbuffers
# defaults (tp_comm_overlap_sms = 16, tp_comm_overlap_splits = 4:
# bench/framework_spec.py TE_UB_DEFAULTS), "async" (a linear layer's backward
# collectives issued asynchronously under its own GEMMs) on a copy with
# tp_async_grad = 1, "serial" on the built-in; grad_dtype "f32"
# (gradients reduced in f32 whatever the model's dtype) on a copy with
# grad_reduce_bytes = 4, "-" on the built-in; loss "f32" (the cross-entropy
# over an f32 copy of the logits) on a copy with loss_f32 = 1; grad_accum
# "fused" (each micro-batch's gradients added into the buffer inside the
# weight-gradient GEMM) on a copy with grad_accum_fusion = 1.
# The zero3_schedule column says how the run's framework overlapped ZeRO-3's
# gathers and reduce-scatters with compute (approf sweep --zero3-schedule:
# deepspeed, fsdp2); "-" sweeps with the default, serial.
# Columns of the newer rows (docs/plans.md, "Columns"): model_args ("-":
# approf's gpt with the row's layers, hidden, heads and vocab; else the
# sweep's model options, e.g. "--model llama --preset llama-3-8b" or
# "--hf-config bench/llm_configs/F.json", with --num-layers and --seq-len
# from the row; the Megatron-Core/NeMo rows of a gated MLP add
# --activation-fusion: bias_activation_fusion is set by NeMo 2's LlamaConfig
# and Llama3Config, nemo/collections/llm/gpt/model/llama.py at 008df615de,
# by Megatron-Bridge's llama_bridge.py and its Qwen3 configs,
# docs/megatron-memory.md); cp (context parallelism: the stage submesh is dp*tp*cp,
# the sweep's micro-batch mbs*dp*cp, apsolve --parallel ...,cp=C); ep
# (expert parallelism: ...,ep=E); etp ("-": Megatron's default, tp; else
# ...,etp=T); dp_shard (HSDP: ...,dp_shard=S); fp8
# ("-", "delayed": Transformer Engine's delayed scaling, swept with
# approf sweep --fp8-recipe delayed, or "current": per-tensor current
# scaling, --fp8-recipe tensorwise); spec_fields ("k=v;k=v": fields of the row's hardware
# spec set otherwise, e.g. the memory of a 96 GB H100); moe_a2a_overlap (0,
# or 1: Megatron-Core's MoE all-to-all overlap, overlap_moe_expert_parallel_comm,
# which Megatron-Bridge's moe_a2a_overlap sets: ...,moe_a2a_overlap=1; a case
# list with the column gives it on every row). A cp or ep case
# whose twin (the same GPUs without cp/ep) the sweep stores out of memory
# is priced from the time the sweep kept for it (docs/context-parallel.md,
# "Refusals"), on the real spec. A cp case whose global batch is not whole
# micro-batches of mbs*dp*cp samples (fewer sequences than the twin's
# micro-batch) gets its twin swept apart at --batch mbs*dp*cp and the
# case's own sweep at G beside it (a cp plan runs G/(mbs*dp) micro-batches,
# each sequence split cp ways); one not whole micro-batches of mbs*dp is
# n/a. set (calibration
# or heldout) and family are read by bench/validation.sh. A missing
# column takes its old meaning (gpt, 1, 1, -, -, -, 0).
# PLANS_SWEEP_OPTS="..." adds options to every approf sweep.
# Printed, never asserted.  See docs/plans.md.
set -u
cd "$(dirname "$0")/.." || exit 1

BUILD=""
CASES=bench/plans_cases.tsv
ONLY=""
KEEP=""
SWEEP_TIMEOUT=110
BUDGET=840
while [ $# -gt 0 ]; do
    case "$1" in
        --build) BUILD=$2; shift 2 ;;
        --cases) CASES=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --keep) KEEP=$2; shift 2 ;;
        --sweep-timeout) SWEEP_TIMEOUT=$2; shift 2 ;;
        --budget) BUDGET=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -u/{/^#/p}' "$0"; exit 0 ;;
        *) echo "plans.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

if [ -z "$BUILD" ]; then
    for d in build-plans build build-*; do
        if [ -x "$d/profiler/cli/approf" ] && [ -x "$d/solver/apsolve" ]; then BUILD=$d; break; fi
    done
fi
if [ -z "$BUILD" ]; then
    echo "plans.sh: no build with approf and apsolve; building build-plans (release)" >&2
    { [ -d build-plans ] || meson setup build-plans -Dbuildtype=release >&2; } && ninja -C build-plans >&2 || exit 1
    BUILD=build-plans
fi
command -v python3 >/dev/null || { echo "plans.sh: python3 is required" >&2; exit 1; }

TMP=$(mktemp -d /tmp/approf-plans.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT
[ -n "$KEEP" ] && mkdir -p "$KEEP"

export APPROF="$BUILD/profiler/cli/approf" APSOLVE="$BUILD/solver/apsolve"
export CASES ONLY KEEP TMP SWEEP_TIMEOUT BUDGET
python3 - <<'PY'
import csv, json, math, os, re, subprocess, sys, time
sys.path.insert(0, "bench")
import framework_spec

APPROF, APSOLVE = os.environ["APPROF"], os.environ["APSOLVE"]
TMP, KEEP, ONLY = os.environ["TMP"], os.environ["KEEP"], os.environ["ONLY"]
SWEEP_TIMEOUT, BUDGET = float(os.environ["SWEEP_TIMEOUT"]), float(os.environ["BUDGET"])
t_start = time.time()

def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %gs" % timeout

def first_line(err):
    for line in err.splitlines():
        line = line.strip()
        if line and not line.startswith("Try "):
            return line
    return "(no message)"

sweep_help = run([APPROF, "sweep", "--help"], 30)[1]
HAS_MBS = "--micro-batch-sizes" in sweep_help
EXTRA = os.environ.get("PLANS_SWEEP_OPTS", "").split()

def shape(n, gph):
    """Submesh of n devices as apsolve --parallel lays a stage out, on hosts
    of gph GPUs."""
    if n <= gph:
        return (1, n) if gph % n == 0 else None
    return (n // gph, gph) if n % gph == 0 else None

host_sizes = {}
def gpus_per_host(hw):
    """GPUs per host of the spec hw (a built-in name or a spec file), as
    approf reads it (a GB200 NVL72 tray: 4)."""
    if hw not in host_sizes:
        rc, out, err = run([APPROF, "hardware", "show", hw, "--format", "json"], 60)
        if rc != 0:
            sys.exit("plans.sh: approf hardware show %s: %s" % (hw, first_line(err)))
        host_sizes[hw] = int(json.loads(out)["gpus_per_host"])
    return host_sizes[hw]

def plans_of(out):
    try:
        d = json.loads(out)
    except ValueError:
        return []
    return d.get("plans", [d]) if isinstance(d, dict) else []

def summarize(plan):
    """(seconds or None, fits, note) of one apsolve plan object."""
    if plan is None:
        return None, None, "no plan"
    stages = plan.get("stages") or []
    fits = bool(stages) and all(s.get("memory_ok") for s in stages)
    fc = plan.get("full_cost")
    if fc is not None:
        return fc, fits, ""
    why = plan.get("full_cost_unavailable", "no full estimate")
    if plan.get("cost") is not None:
        return plan["cost"], fits, "Alpa T only (%s)" % why
    return None, fits, why

def fmt(x):
    if x is None:
        return "n/a"
    return "%.3f" % x if x < 10 else "%.2f" % x

def apsolve(db, args):
    rc, out, err = run([APSOLVE, "--db", db, "--format", "json", "--no-store", "--quiet"] + args, 120)
    ps = plans_of(out)
    d3 = next((p for p in ps if p.get("kind") == "3d"), None)
    auto = next((p for p in ps if p.get("kind") == "auto"), None)
    return rc, d3, auto, err

# How the measured framework ran its communication (columns grad_sync,
# tp_comm, grad_dtype, loss and grad_accum, bench/framework_spec.py).
with open(os.environ["CASES"]) as f:
    cases = [r for r in csv.DictReader(f, delimiter="\t")]
framework_spec.check("plans.sh", os.environ["CASES"], cases,
                     {"grad_sync": "-", "tp_comm": "serial", "grad_dtype": "-", "loss": "-",
                      "grad_accum": "-"})
# The model's dropout rate as the run trained it (column dropout: a
# probability, or - for none).
for line, c in enumerate(cases, start=2):
    v = c.get("dropout", "-")
    try:
        ok = v == "-" or 0.0 <= float(v) < 1.0
    except ValueError:
        ok = False
    if not ok:
        sys.exit("plans.sh: %s:%d: field 'dropout': %r is not a probability in [0, 1) or -" %
                 (os.environ["CASES"], line, v))

# The columns of the newer rows (model_args, cp, ep, dp_shard, fp8,
# spec_fields, set, family); a case list without them keeps its meaning.
NEW_DEFAULTS = {"model_args": "-", "cp": "1", "ep": "1", "etp": "-", "dp_shard": "-", "fp8": "-",
                "spec_fields": "-", "set": "heldout", "family": "-"}
def bad(line, field, v, why):
    sys.exit("plans.sh: %s:%d: field '%s': %r %s" % (os.environ["CASES"], line, field, v, why))
for line, c in enumerate(cases, start=2):
    for k, d in NEW_DEFAULTS.items():
        if c.get(k) in (None, ""):
            c[k] = d
    for k in ("cp", "ep"):
        if not c[k].isdigit() or int(c[k]) < 1:
            bad(line, k, c[k], "is not a whole number >= 1")
    if c["etp"] != "-" and (not c["etp"].isdigit() or int(c["etp"]) < 1):
        bad(line, "etp", c["etp"], "is not a whole number >= 1 or -")
    if c["dp_shard"] != "-" and (not c["dp_shard"].isdigit() or int(c["dp_shard"]) < 1):
        bad(line, "dp_shard", c["dp_shard"], "is not a whole number >= 1 or -")
    # moe_a2a_overlap: where the list has the column, every row gives it
    if "moe_a2a_overlap" in c:
        v = c["moe_a2a_overlap"]
        if v not in ("0", "1"):
            bad(line, "moe_a2a_overlap", v, "is not 0 or 1" if v is not None else
                "is missing (the row has fewer fields than the header)")
        if v == "1" and int(c["ep"]) < 2:
            bad(line, "moe_a2a_overlap", v, "needs expert parallelism (ep >= 2)")
    else:
        c["moe_a2a_overlap"] = "0"
    if c["fp8"] not in ("-", "delayed", "current"):
        bad(line, "fp8", c["fp8"], "is not one of -, delayed, current")
    if c["set"] not in ("calibration", "heldout"):
        bad(line, "set", c["set"], "is not one of calibration, heldout")
    if c["spec_fields"] != "-":
        for kv in c["spec_fields"].split(";"):
            k, eq, v = kv.partition("=")
            if not eq or not k.strip() or not v.strip():
                bad(line, "spec_fields", c["spec_fields"], "is not k=v;k=v or -")
    for k in ("gpus", "tp", "pp", "dp", "mbs", "global_batch"):
        if not c[k].isdigit() or int(c[k]) < 1:
            bad(line, k, c[k], "is not a whole number >= 1")
    if int(c["dp"]) * int(c["tp"]) * int(c["pp"]) * int(c["cp"]) != int(c["gpus"]):
        bad(line, "gpus", c["gpus"], "is not dp x tp x pp x cp = %d" %
            (int(c["dp"]) * int(c["tp"]) * int(c["pp"]) * int(c["cp"])))

specs = {}
def hardware_for(c):
    """The --hardware of case c: the built-in spec, or a copy of it with
    the fields its framework sets otherwise (framework_spec.overrides)."""
    name, fields = c["hardware"], dict(framework_spec.overrides(c), **framework_spec.spec_fields(c))
    if not fields:
        return name
    path = framework_spec.spec_name(TMP, name, fields)
    if path not in specs:
        framework_spec.write_spec("plans.sh", APPROF, name, fields, path)
        specs[path] = path
    return path
if ONLY:
    cases = [c for c in cases if re.search(ONLY, c["id"])]

hdr = ["case", "GPUs", "layout dp.tp.pp sp/zero/rc/vpp/mbs", "meas s", "as-run s", "ratio",
       "fits", "3-D s", "ratio", "fits", "auto s", "auto<=run", "sweep s"]
widths = [24, 5, 36, 8, 9, 6, 4, 9, 6, 4, 9, 9, 7]
def row(cells):
    print("  ".join(str(c).ljust(w) if i in (0, 2) else str(c).rjust(w)
                    for i, (c, w) in enumerate(zip(cells, widths))), flush=True)

print("approf: %s  apsolve: %s  sweep --micro-batch-sizes: %s" %
      (APPROF, APSOLVE, "yes" if HAS_MBS else "no (micro-batch fixed by --batch/--micro-batches)"))
print("s = seconds per iteration; ratio = predicted / measured; as-run = every knob of the case; "
      "3-D = dp,tp,pp only\n")
row(hdr)
row(["-" * w for w in widths])
ratios = {"as-run": [], "3-D": []}

for c in cases:
    cid = c["id"]
    n, tp, pp, dp = (int(c[k]) for k in ("gpus", "tp", "pp", "dp"))
    mbs, G = int(c["mbs"]), int(c["global_batch"])
    meas = float(c["measured_s_iter"])
    cp, ep = int(c["cp"]), int(c["ep"])
    layout = "%d.%d.%d sp%s/z%s/%s/v%s/m%d" % (dp, tp, pp, c["sp"], c["zero"], c["recompute"], c["vpp"], mbs)
    layout += "".join(",%s%s" % (k, c[k]) for k, d in (("cp", "1"), ("ep", "1"), ("etp", "-"), ("dp_shard", "-"))
                      if c[k] != d) + (",fp8" if c["fp8"] != "-" else "")
    notes = []
    if time.time() - t_start > BUDGET:
        row([cid, n, layout, fmt(meas), "n/a", "", "", "n/a", "", "", "n/a", "", ""])
        print("    n/a: time budget (%gs) spent" % BUDGET)
        continue
    # a cp stage is priced from the same GPUs run as data parallelism
    # dp*cp (docs/context-parallel.md): the sweep's stage submesh and
    # micro-batch are those of that layout
    dpe = dp * cp
    S = dpe * tp
    gph = gpus_per_host(hardware_for(c))
    shapes = [s for s in (shape(S // 2, gph) if S % 2 == 0 and S > 1 else None, shape(S, gph),
                          shape(2 * S, gph) if 2 * S <= n else None) if s]
    if shape(S, gph) is None or n % gph:
        row([cid, n, layout, fmt(meas), "n/a", "", "", "n/a", "", "", "n/a", "", ""])
        print("    n/a: stage submesh of %d devices is not (1,k | %d) or (k,%d)" % (S, gph, gph))
        continue
    L = 4 if pp == 1 else pp * max(1, math.ceil(8 / pp))
    # a cp plan runs G / (mbs*dp) micro-batches, each sequence split over
    # cp GPUs (solver/session_cp.c); its stages are priced from the dp*cp
    # twin's entries at micro-batch mbs*dp*cp. When that does not divide G
    # (fewer sequences than dp*cp*mbs), the twin is swept at one such
    # micro-batch (--batch mbs*dp*cp: per-micro-batch figures, whatever the
    # batch) and the run's main sweep at G beside it (docs/plans.md)
    twin_apart = cp > 1 and G % (mbs * dpe) != 0 and G % (mbs * dp) == 0
    if G % (mbs * dpe) and not twin_apart:
        row([cid, n, layout, fmt(meas), "n/a", "", "", "n/a", "", "", "n/a", "", ""])
        print("    n/a: global batch %d is not whole micro-batches of mbs x dp = %d samples" %
              (G, mbs * dp))
        continue
    K = G // (mbs * dpe) if not twin_apart else 1
    db = os.path.join(KEEP or TMP, cid + ".db")
    if os.path.exists(db):
        os.remove(db)
    if c["model_args"] == "-":
        model = ["--model", "gpt", "--num-layers", c["layers"], "--hidden", c["hidden"],
                 "--heads", c["heads"], "--vocab", c["vocab"]]
    else:
        model = c["model_args"].split() + ["--num-layers", c["layers"]]
    sweep = [APPROF, "sweep"] + model + ["--backend", "model",
             "--seq-len", c["seq"], "--layers", str(L),
             "--cluster", "%dx%d" % (n // gph, gph),
             "--batch", str(G if not twin_apart else mbs * dpe), "--micro-batches", str(K),
             "--dtype", c["dtype"],
             "--hardware", hardware_for(c),
             "--submesh-space", "manual:" + ",".join("%dx%d" % s for s in shapes),
             "--logical-space", "all", "--stage-imbalance-tolerance", "1.0",
             "--db", db, "--quiet"]
    sweep += EXTRA
    # Knobs the sweep may have (probed from its --help): profile only the
    # case's micro-batch size (samples per pipeline micro-batch: mbs x dp),
    # recomputation and ZeRO stage.
    extra = []
    if HAS_MBS:
        extra += ["--micro-batch-sizes", str(mbs * dpe)]
    if "--attention" in sweep_help and c.get("attention", "") in ("flash", "eager"):
        extra += ["--attention", c["attention"]]
    if "--dropout" in sweep_help and c.get("dropout", "-") != "-":
        extra += ["--dropout", c["dropout"]]
    if "--recompute" in sweep_help:
        extra += ["--recompute", c["recompute"]]
    if "--zero" in sweep_help:
        extra += ["--zero", c["zero"]]
    # how the run's framework overlapped ZeRO-3's collectives with compute
    # (docs/variants.md, "ZeRO-3 overlap"); "-": serial, the sweep's default
    if "--zero3-schedule" in sweep_help and c.get("zero3_schedule", "-") not in ("-", ""):
        extra += ["--zero3-schedule", c["zero3_schedule"]]
    # three memory levels (the fastest, the least-memory sharding and one
    # between), so a layout that only fits when sharded like Megatron is in
    # the database
    # the recipe the run used (Megatron-LM's --fp8-recipe names: "current"
    # is per-tensor current scaling, "tensorwise"); a build without
    # --fp8-recipe prices both as delayed scaling
    if c["fp8"] != "-":
        if "--fp8-recipe" in sweep_help:
            extra += ["--fp8-recipe", "tensorwise" if c["fp8"] == "current" else "delayed"]
        else:
            extra += ["--fp8"]
    if "--memory-levels" in sweep_help:
        extra += ["--memory-levels", "3"]
    t0 = time.time()
    rc, _, err = run(sweep + extra, SWEEP_TIMEOUT)
    if rc == 2 and extra:
        notes.append("sweep rejected %s: %s" % (" ".join(extra), first_line(err)))
        extra = []
        rc, _, err = run(sweep, SWEEP_TIMEOUT)
    if rc == 0 and twin_apart:
        # the run's own sweep at G, micro-batch mbs*dp (the cp plan's),
        # made last: the main sweep of apsolve's family
        main = list(sweep)
        main[main.index("--batch") + 1] = str(G)
        main[main.index("--micro-batches") + 1] = str(G // (mbs * dp))
        mextra = [x if i == 0 or extra[i - 1] != "--micro-batch-sizes" else str(mbs * dp)
                  for i, x in enumerate(extra)]
        notes.append("twin swept apart at batch %d (global batch %d < mbs x dp x cp)" %
                     (mbs * dpe, G))
        rc, _, err = run(main + mextra, SWEEP_TIMEOUT)
    tsweep = time.time() - t0
    if rc != 0:
        row([cid, n, layout, fmt(meas), "n/a", "", "", "n/a", "", "", "n/a", "", "%.1f" % tsweep])
        print("    n/a: sweep failed (exit %d): %s" % (rc, first_line(err)))
        continue

    knobs = "dp=%d,tp=%d,pp=%d,sp=%s,zero=%s,recompute=%s,mbs=%d" % (
        dp, tp, pp, c["sp"], c["zero"], c["recompute"], mbs)
    if c["vpp"] not in ("-", "", "1"):
        knobs += ",vpp=" + c["vpp"]
    if cp > 1:
        knobs += ",cp=%d" % cp
    if ep > 1:
        knobs += ",ep=%d" % ep
    if c["etp"] != "-":
        knobs += ",etp=" + c["etp"]
    if c["moe_a2a_overlap"] == "1":
        knobs += ",moe_a2a_overlap=1"
    if c["dp_shard"] != "-":
        knobs += ",dp_shard=" + c["dp_shard"]
    elif c["vpp"] == "-":
        notes.append("vpp not published: priced without interleaving")
    rc_full, d3_full, auto_full, err_full = apsolve(db, ["--parallel", knobs, "--global-batch", str(G)])
    rc_3d, d3_only, auto_3d, err_3d = apsolve(db, ["--parallel", "dp=%d,tp=%d,pp=%d" % (dpe, tp, pp)])

    if d3_full is None:
        full_s, full_fits = None, None
        notes.append("as-run: n/a: %s" % (first_line(err_full) if rc_full else "no 3-D plan in the output"))
    else:
        full_s, full_fits, why = summarize(d3_full)
        if why:
            notes.append("as-run: " + why)
    if d3_only is None:
        s3, fits3 = None, None
        notes.append("3-D: n/a: %s" % (first_line(err_3d) if rc_3d else "no 3-D plan in the output"))
    else:
        s3, fits3, why = summarize(d3_only)
        if why:
            notes.append("3-D: " + why)
    auto = auto_full if d3_full is not None else auto_3d
    auto_s, _, why = summarize(auto) if auto else (None, None, "")
    if auto is None:
        notes.append("auto: n/a: %s" % first_line(err_full if d3_full is not None else err_3d))
    elif why:
        notes.append("auto: " + why)
    ref = full_s if d3_full is not None else s3
    ref_ok = (full_fits if d3_full is not None else fits3) and ref is not None
    if auto_s is None or ref is None:
        le = "n/a"
    elif not ref_ok:
        le = "run OOM"
    else:
        le = "yes" if auto_s <= ref * (1 + 1e-9) else "NO"
    def ratio(x):
        return "%.2f" % (x / meas) if x is not None else ""
    if full_s is not None and full_fits:
        ratios["as-run"].append(full_s / meas)
    if s3 is not None and fits3:
        ratios["3-D"].append(s3 / meas)
    yn = lambda b: "" if b is None else ("yes" if b else "no")
    row([cid, n, layout, fmt(meas), fmt(full_s), ratio(full_s), yn(full_fits),
         fmt(s3), ratio(s3), yn(fits3), fmt(auto_s), le, "%.1f" % tsweep])
    for note in notes:
        print("    " + note)

print()
for k, v in ratios.items():
    if v:
        gm = math.exp(sum(math.log(x) for x in v) / len(v))
        print("%-7s predicted/measured over %d cases that fit: geometric mean %.2f, min %.2f, max %.2f"
              % (k, len(v), gm, min(v), max(v)))
    else:
        print("%-7s no case priced and fitting in memory" % k)
print("total %.0f s" % (time.time() - t_start))
PY
exit $?
