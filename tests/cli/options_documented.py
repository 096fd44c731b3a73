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

readme = set(OPT.findall(open(os.path.join(root, "README.md"), encoding="utf-8").read()))
failures = []
for o in sorted(taken - documented):
    failures.append("%s is in a --help but in no README.md, docs/ or schemas/ page" % o)
for o in sorted(readme - taken - framework):
    failures.append("README.md names %s, which no program takes and no framework manifest has" % o)
for f in failures:
    print("FAIL:", f)
print("%d options taken, %d documented, %d failures" % (len(taken), len(documented), len(failures)))
sys.exit(1 if failures else 0)
