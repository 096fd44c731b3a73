#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/validation.sh's --bin-size (docs/validation.md, "BERT phase 2 by
sequence length: LDDL's bin sizes against the price (issue 33, DLE)"):

- a binned row priced with one bin of 512 tokens (--bin-size 512: every
  micro-batch padded to the longest of its mbs samples drawn from the
  whole length distribution, rounded up to 8) takes the mean padded
  length computed here from bench/bert_wikipedia_lengths.tsv, well above
  the mean of DeepLearningExamples' bins of 64;
- a bin size that is not a power of two from 8 to 512 is refused with
  exit status 2, naming the option.

Usage: bert_bin_size.py SOURCE_ROOT BUILD_ROOT
"""
import os
import re
import subprocess
import sys
import tempfile

root, build = sys.argv[1:3]
failures = []
MBS = 32

counts = {}
with open(os.path.join(root, "bench", "bert_wikipedia_lengths.tsv")) as f:
    for line in f:
        t = line.rstrip("\n").split("\t")
        if line.startswith("#") or not line.strip() or t[0] == "length":
            continue
        counts[int(t[0])] = int(t[1])
total = sum(counts.values())
# the longest of MBS draws is <= L with probability F(L)^MBS; padded up to 8
expect, cum, prev = 0.0, 0, 0.0
for L in range(1, 513):
    cum += counts.get(L, 0)
    f = (cum / total) ** MBS
    expect += (f - prev) * (-(-L // 8) * 8)
    prev = f

header = ("id\tset\tmodel\tpreset\tseq\thardware\thosts\tgpus_per_host\tmbs\taccum\tdtype\t"
          "precision\tmeasured\tunit\tsource\tmodel_options\tworkload\tgrad_sync\tgrad_dtype\t"
          "optimizer\tddp\n")
row = ("bert-bin-size\tcalibration\tbert\tbase\t512\ta100-80g\t1\t1\t%d\t1\tf16\tAMP\t100\tseq/s\t"
       "test\t--num-layers 1 --vocab 30528\tbinned\tafter-backward\t-\t-\t-\n" % MBS)


def run(*args):
    return subprocess.run([os.path.join(root, "bench", "validation.sh"), "--build", build,
                           "--no-plans"] + list(args), capture_output=True, text=True,
                          timeout=600)


with tempfile.TemporaryDirectory() as tmp:
    cases = os.path.join(tmp, "cases.tsv")
    with open(cases, "w") as f:
        f.write(header + row)
    means = {}
    for bs in ("512", "64"):
        p = run("--cases", cases, "--bin-size", bs)
        m = re.search(r"mean (\d+) tokens", p.stdout)
        if p.returncode or not m:
            failures.append("--bin-size %s: exit %d, no mean padded length: %s" %
                            (bs, p.returncode, (p.stderr or p.stdout).strip()[-300:]))
            continue
        means[bs] = int(m.group(1))
    if "512" in means and abs(means["512"] - expect) > 0.5 + 1e-9:
        failures.append("--bin-size 512: mean padded %d tokens, expected %.1f" % (means["512"], expect))
    if "512" in means and "64" in means and not means["64"] < means["512"] - 100:
        failures.append("bins of 64 pad to %d tokens on average, one bin to %d" %
                        (means["64"], means["512"]))
    for bad in ("48", "1024", "x"):
        p = run("--cases", cases, "--bin-size", bad)
        if p.returncode != 2 or "--bin-size" not in p.stderr:
            failures.append("--bin-size %s: exit %d (expected 2 naming the option): %s" %
                            (bad, p.returncode, p.stderr.strip()))

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
