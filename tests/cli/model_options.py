#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""approf model and approf sweep take the same model and layer options (one
table, profiler/cli/model_options.c): both --help texts list the same ones,
old spellings (--width-factor, --manual, --manual-boundary) included; each
command takes a good value of each (a sweep stops at its database, a
directory, after every check), and refuses a bad value of each with exit 2
and the one message of a bad option value, naming the option as it was
spelled:

    approf: --OPTION needs WHAT, got 'VALUE'
    Try 'approf CMD --help'

The options a sweep cannot carry yet (marked "approf model only" in its
--help) are refused by a sweep with exit 2, naming them.

Usage: model_options.py APPROF MODEL_DATA_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

approf, data = sys.argv[1:3]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def run(*args, cwd=None):
    p = subprocess.run([approf, *args], capture_output=True, text=True, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def model_section_options(cmd):
    """The options of the Model and Layers sections of cmd's --help, with
    the old spellings they name ("also --X"), and those marked model-only."""
    rc, out, _ = run(cmd, "--help")
    check(rc == 0, "approf %s --help: exit %d" % (cmd, rc))
    m = re.search(r"^Model \(.*?\n(.*?)^(?:Cluster and batch|Other options):", out, re.M | re.S)
    if not check(m is not None, "approf %s --help: no Model/Layers sections" % cmd):
        return set(), set()
    text = m.group(1)
    names = set(re.findall(r"^  (--[a-z][a-z0-9-]*)", text, re.M))
    names |= set(re.findall(r"also\s+(--[a-z][a-z0-9-]*)", text))
    only = set()
    for entry in re.split(r"\n(?=  --)", text):
        entry = re.split(r"\n(?=\S)", entry)[0]  # up to a line of its own (a note)
        if "(approf model only)" in " ".join(entry.split()):
            only.add(re.match(r"\s*(--[a-z][a-z0-9-]*)", entry).group(1))
    return names, only


model_opts, _ = model_section_options("model")
sweep_opts, model_only = model_section_options("sweep")
check(model_opts == sweep_opts,
      "model and sweep list different model options: only model: %s; only sweep: %s"
      % (sorted(model_opts - sweep_opts), sorted(sweep_opts - model_opts)))
for o in ("--width", "--width-factor", "--manual-layers", "--manual", "--manual-boundaries",
          "--manual-boundary", "--model", "--layers", "--eps", "--dtype", "--capacity-factor"):
    check(o in model_opts, "approf model --help lacks %s" % o)

# option -> (model args that take a good value, good value, bad value);
# None: a flag (no value). The bad values of the named-thing options are
# checked by their readers (an unknown name: exit 2; a missing file: exit 1).
gpt = ["--model", "gpt", "--num-layers", "2"]
cases = {
    "--num-layers": (["--model", "gpt"], "2", "2000"),
    "--hidden": (gpt, "96", "1e9"),
    "--heads": (gpt, "4", "0"),
    "--seq-len": (gpt, "128", "-1"),
    "--vocab": (gpt, "1000", "x"),
    "--attention": (gpt, "flash", "bogus"),
    "--activation-fusion": (["--model", "llama", "--num-layers", "1"], None, None),
    "--attention-unpad": (gpt + ["--attention", "flash"], None, None),
    "--eager-elementwise": (["--model", "llama", "--num-layers", "1"], None, None),
    "--dropout": (gpt, "0.1", "1.5"),
    "--mlm-positions": (["--model", "bert", "--num-layers", "2"], "20", "0"),
    "--dtype": (["--model", "mlp"], "f16", "f64"),
    "--depth": (["--model", "wide_resnet"], "18", "0"),
    "--width": (["--model", "wide_resnet"], "1", "x"),
    "--width-factor": (["--model", "wide_resnet"], "1", "0"),
    "--num-filters": (["--model", "wide_resnet"], "16", "-3"),
    "--image-size": (["--model", "resnet50"], "64", "abc"),
    "--num-classes": (["--model", "resnet50"], "10", "0"),
    "--capacity-factor": (["--model", "mixtral", "--num-layers", "1"], "1.5", "0"),
    "--layers": (["--model", "mlp"], "2", "0"),
    "--eps": (["--model", "mlp"], "0.3", "-1"),
    "--manual-boundaries": (["--model", "mlp"], None, None),
    "--manual-boundary": (["--model", "mlp"], None, None),
    "--manual-layers": (["--model", "mlp", "--manual-boundaries"], None, None),
    "--manual": (["--model", "mlp", "--manual-boundaries"], None, None),
    "--model": ([], "mlp", "nosuch"),
    "--preset": (["--model", "gpt", "--num-layers", "2"], "gpt2-small", "nosuch"),
    "--dataset": (["--model", "resnet50"], "cifar10", "nosuch"),
    "--hf-config": ([], os.path.join(data, "gpt2.json"), "missing.json"),
    "--model-file": (["--batch", "8"], "MODEL_FILE", "missing.json"),
    "--dim": (["--model-file", "MODEL_FILE", "--batch", "8"], "seq=16", "seq"),
}
named_things = {"--model": 2, "--preset": 2, "--dataset": 2, "--hf-config": 1, "--model-file": 1}
for o in sorted(model_opts - set(cases)):
    failures.append("%s is a model option this test does not try (add it to cases)" % o)


def as_model(args):
    """approf model show takes the model as NAME as well as --model NAME."""
    if "--model" in args:
        i = args.index("--model")
        return [args[i + 1]] + args[:i] + args[i + 2:]
    return args


with tempfile.TemporaryDirectory(prefix="approf-model-options-") as tmp:
    dbdir = os.path.join(tmp, "dir.db")
    os.mkdir(dbdir)
    mfile = os.path.join(tmp, "mlp.json")
    rc, _, err = run("model", "export", "mlp", "--batch", "8", "-o", mfile)
    check(rc == 0, "model export mlp: exit %d: %s" % (rc, err))

    def sweep(args, db):
        return run("sweep", *args, "--backend", "model", "--micro-batches", "1", "--db", db,
                   "--quiet")

    def show(args):
        return run("model", "show", *as_model(args))

    for opt in sorted(cases):
        base, good, bad = cases[opt]
        with_good = [a.replace("MODEL_FILE", mfile) for a in base] + [opt] + ([] if good is None else [good.replace("MODEL_FILE", mfile)])
        # a good value: model show prints the model; a sweep passes every
        # check and stops at opening the database (a directory: exit 1)
        rc, _, err = show(with_good)
        check(rc == 0, "model show %s: exit %d: %s" % (" ".join(with_good), rc, err.strip()))
        rc, _, err = sweep(with_good, dbdir)
        if opt in model_only:
            check(rc == 2 and ("%s: a sweep cannot carry" % opt) in err,
                  "sweep %s (approf model only): exit %d: %s" % (opt, rc, err.strip()))
        else:
            check(rc == 1 and "is a directory" in err,
                  "sweep %s: exit %d, not the database's failure: %s"
                  % (" ".join(with_good), rc, err.strip()))
        if bad is None:
            continue
        # a bad value: the one message, exit 2, nothing created
        for cmd in ("model", "sweep"):
            db = os.path.join(tmp, "never.db")
            args = base + [opt, bad]
            rc, out, err = show(args) if cmd == "model" else sweep(args, db)
            what = "%s %s %s" % (cmd, opt, bad)
            want = named_things.get(opt, 2)
            check(rc == want, "%s: exit %d, want %d: %s" % (what, rc, want, err.strip()))
            check(not os.path.exists(db), "%s created the database" % what)
            if opt in named_things:
                check(bad in err, "%s: the message does not name '%s': %s" % (what, bad, err))
                continue
            lines = err.splitlines()
            check(len(lines) == 2 and re.fullmatch(r"approf: %s needs .+, got '%s'"
                                                   % (re.escape(opt), re.escape(bad)), lines[0])
                  and lines[1] == "Try 'approf %s --help'" % cmd,
                  "%s: not the bad-value message: %r" % (what, err))

    # both spellings of the model: NAME and --model NAME, not both
    rc, out_a, _ = run("model", "show", "mlp")
    rc_b, out_b, _ = run("model", "show", "--model", "mlp")
    check(rc == 0 and rc_b == 0 and out_a == out_b, "model show mlp != model show --model mlp")
    rc, _, err = run("model", "show", "mlp", "--model", "gpt")
    check(rc == 2, "model show NAME --model NAME: exit %d" % rc)
    # the old spellings give the same model as the new ones
    for old, new in (("--width-factor", "--width"), ("--manual", "--manual-layers")):
        extra = ["1"] if old == "--width-factor" else ["--manual-boundaries"]
        model = "wide_resnet" if old == "--width-factor" else "mlp"
        args_old = [old] + extra if old == "--width-factor" else extra + [old]
        args_new = [new] + extra if old == "--width-factor" else extra + [new]
        a = run("model", "show", model, *args_old)
        b = run("model", "show", model, *args_new)
        check(a[0] == 0 and a == b, "model show %s differs from %s" % (old, new))
    # the other commands' choices take the same message
    rc, _, err = run("models", "--format", "xml")
    check(rc == 2 and err.startswith("approf: --format needs one of text|json, got 'xml'\n"),
          "models --format xml: %r" % err)
    # approf model list is approf models (as approf hardware list lists the
    # specs), and an unknown subcommand names the three
    a = run("models", "--format", "json")
    b = run("model", "list", "--format", "json")
    check(a[0] == 0 and a == b, "model list --format json differs from models --format json")
    rc, _, err = run("model", "lst")
    check(rc == 2 and "(list, show or export)" in err, "model lst: exit %d, %r" % (rc, err))

for f in failures:
    print("FAIL:", f)
print("%d model options, %d of them approf model only; %d failures"
      % (len(model_opts), len(model_only), len(failures)))
sys.exit(1 if failures else 0)
