#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hugging Face configs as users have them (profiler/model/hfconfig.c):
a snapshot directory (config.json beside model.safetensors.index.json) is
read like its config.json, and the checkpoint's total_size is checked
against the count (agrees, or the difference is named); a malformed index
is an error naming it; a key given twice takes its last value with a
notice, as Python's json does.

Usage: hf_snapshot.py APPROF HF_DIR
"""
import json
import os
import subprocess
import sys
import tempfile


def show(approf, path):
    p = subprocess.run([approf, "model", "show", "--hf-config", path], capture_output=True,
                       text=True)
    params = None
    for line in p.stdout.splitlines():
        if line.startswith("parameters: "):
            params = int(line.split()[1])
    return p.returncode, params, p.stderr


def main():
    approf, hf = sys.argv[1:3]
    fails = []
    src = os.path.join(hf, "qwen3-8b.json")
    with open(src) as f:
        text = f.read()
    rc, want, _ = show(approf, src)
    if rc != 0 or not want:
        sys.exit("FAIL: %s does not load" % src)
    with tempfile.TemporaryDirectory() as d:
        snap = os.path.join(d, "snap")
        os.mkdir(snap)
        with open(os.path.join(snap, "config.json"), "w") as f:
            f.write(text)
        rc, n, err = show(approf, snap)
        if rc != 0 or n != want or "total_size" in err:
            fails.append("a snapshot without an index: rc %d, %s parameters, %r" % (rc, n, err))
        index = os.path.join(snap, "model.safetensors.index.json")
        with open(index, "w") as f:
            json.dump({"metadata": {"total_size": 2 * want}, "weight_map": {}}, f)
        rc, n, err = show(approf, snap)
        if rc != 0 or n != want or "the count agrees" not in err:
            fails.append("total_size of the count: rc %d, %r" % (rc, err))
        with open(index, "w") as f:
            json.dump({"metadata": {"total_size": 2 * want + 2048}}, f)
        rc, n, err = show(approf, snap)
        if rc != 0 or "(+1024)" not in err:
            fails.append("total_size of 1024 more parameters: rc %d, %r" % (rc, err))
        with open(index, "w") as f:
            f.write('{"metadata": {"total_size": "big"}}')
        rc, n, err = show(approf, snap)
        if rc == 0 or "model.safetensors.index.json" not in err or "total_size" not in err:
            fails.append("a malformed index must fail naming it: rc %d, %r" % (rc, err))
        dup = os.path.join(d, "dup.json")
        with open(dup, "w") as f:
            f.write(text.replace("{", '{\n  "hidden_act": "gelu",', 1))
        rc, n, err = show(approf, dup)
        if rc != 0 or n != want or "duplicate" not in err or "last value" not in err:
            fails.append("a duplicated key: rc %d, %s parameters, %r" % (rc, n, err))
    if fails:
        print("FAIL:\n" + "\n".join(fails))
        return 1
    print("ok: snapshot directories, total_size and duplicate keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
