#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The README and the programs agree on their options: every option a
program's --help lists is documented (README.md, docs/, schemas/), and every
option README.md names is one a program takes, or a launch-file flag of a
framework manifest (reports/manifests/), which the README quotes.

Usage: options_documented.py SOURCE_ROOT APPROF APSOLVE APREPORT
"""
import glob
import json
import os
import re
import subprocess
import sys

root, approf, apsolve, apreport = sys.argv[1:5]
OPT = re.compile(r"--[a-z][a-z0-9-]*")


def helptext(*cmd):
    p = subprocess.run(list(cmd), capture_output=True, text=True)
    return p.stdout + p.stderr


commands = re.findall(r"^  ([a-z]+)  ", helptext(approf, "--help"), re.M)
assert "sweep" in commands and "model" in commands, commands
helps = [helptext(approf, "--help"), helptext(apsolve, "--help"), helptext(apreport, "--help")]
helps += [helptext(approf, c, "--help") for c in commands]
helps += [helptext(approf, "hardware", "curves", "--help")]
taken = set(OPT.findall("\n".join(helps)))

docs = ""
for pattern in ("README.md", "docs/*.md", "schemas/*.md"):
    for path in glob.glob(os.path.join(root, pattern)):
        docs += open(path, encoding="utf-8").read()
documented = set(OPT.findall(docs))

framework = set()
for path in glob.glob(os.path.join(root, "reports", "manifests", "*.json")):
    framework |= set(OPT.findall(json.dumps(json.load(open(path)))))

readme_text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
readme = set(OPT.findall(readme_text))
failures = []
for o in sorted(taken - documented):
    failures.append("%s is in a --help but in no README.md, docs/ or schemas/ page" % o)

# Every value of a choice a --help spells "--opt a|b|c" is documented with
# its option ("--opt b", or the same "--opt a|b|c" list): --variants auto,
# --zero3-schedule fsdp2, --backend model.
helptext_all = "\n".join(helps)
for m in re.finditer(r"(--[a-z][a-z0-9-]*)[ =]([a-z0-9_+]+(?:\|[a-z0-9_+]+)+)", helptext_all):
    opt = m.group(1)
    for v in m.group(2).split("|"):
        if not re.search(re.escape(opt) + r"[ =`]+(?:[a-z0-9_+]+\|)*" + re.escape(v) + r"(?![a-z0-9_])",
                         docs):
            failures.append("%s %s is in a --help but no README.md, docs/ or schemas/ page "
                            "says '%s %s'" % (opt, v, opt, v))

# apsolve --parallel's knobs (dp=, tp=, ..., cp=, ep=, etp=) live inside one
# option's text: README.md names each (as `knob` or knob=).
block = re.search(r"^  --parallel .*?(?=^  --)", helps[1], re.M | re.S)
assert block, "apsolve --help has no --parallel entry"
knobs = sorted(set(re.findall(r"(?<![a-z0-9_-])([a-z][a-z0-9_]*)=", block.group(0))))
assert {"dp", "tp", "pp", "cp", "ep", "etp"} <= set(knobs), knobs
for k in knobs:
    if not re.search(r"`%s`|(?<![a-z_-])%s=" % (re.escape(k), re.escape(k)), readme_text):
        failures.append("apsolve --parallel takes %s=, which README.md does not name" % k)

# The options that change what a newcomer's default run does are in
# README.md itself, not only in a docs/ page.
for o in ("--variants", "--memory-headroom", "--zero3-schedule", "--micro-batch-sizes",
          "--backend"):
    if o not in taken:
        failures.append("%s is in no --help" % o)
    if o not in readme:
        failures.append("%s changes a default run, and README.md does not name it" % o)
for o in sorted(readme - taken - framework):
    failures.append("README.md names %s, which no program takes and no framework manifest has" % o)
for f in failures:
    print("FAIL:", f)
print("%d options taken, %d documented, %d failures" % (len(taken), len(documented), len(failures)))
sys.exit(1 if failures else 0)
