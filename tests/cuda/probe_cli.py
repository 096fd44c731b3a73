#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# `approf probe` end to end without a GPU: usage errors exit 2, a missing
# module or device prints one line and exits 1 without creating the
# database, and with the fake module (tests/cuda/fake_module.c) the probe
# stores a 'measured' hardware row, its curves and its GEMM shape tables.
# Usage: probe_cli.py APPROF FAKE_MODULE_DIR REAL_MODULE_BUILT(0|1)
import os
import sqlite3
import subprocess
import sys
import tempfile

approf, fake_dir, real_built = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)
    else:
        print("ok:", what)


def run(args, **env):
    e = dict(os.environ)
    e.pop("APPROF_MODULE_DIR", None)
    e.pop("FAKE_APPROF_NODEV", None)
    e.update(env)
    p = subprocess.run([approf, "probe"] + args, env=e, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "probe.db")

    rc, out, err = run(["--help"])
    check(rc == 0 and out.startswith("Usage: approf probe"), "--help exits 0 with usage on stdout")
    rc, out, err = run(["--bogus"])
    check(rc == 2 and "Try 'approf probe --help'" in err, "unknown option exits 2")
    rc, out, err = run(["--max-bytes", "12"])
    check(rc == 2 and "--max-bytes" in err, "--max-bytes below 1K exits 2")
    rc, out, err = run(["--max-bytes", "4X"])
    check(rc == 2, "--max-bytes with a bad suffix exits 2")

    rc, out, err = run(["--db", db], APPROF_MODULE_DIR="/nonexistent/approf-dir")
    lines = err.splitlines()
    check(rc == 1 and len(lines) == 1 and
          lines[0].startswith("approf: no CUDA backend: module /nonexistent/approf-dir/approf-cuda.so"),
          "missing module: one line, exit 1 (%r)" % err)
    check(not os.path.exists(db), "missing module: no database created")

    if real_built:
        rc, out, err = run(["--db", db], CUDA_VISIBLE_DEVICES="")
        lines = err.splitlines()
        check(rc == 1 and len(lines) == 1 and
              lines[0].startswith("approf: no CUDA device: cudaGetDeviceCount: "),
              "real module, no device: one line, exit 1 (%r)" % err)
        check(not os.path.exists(db), "no device: no database created")

    rc, out, err = run(["--db", db], APPROF_MODULE_DIR=fake_dir, FAKE_APPROF_NODEV="1")
    check(rc == 1 and err == "approf: no CUDA device: fake module second line\n",
          "module's no-device message on one line (%r)" % err)

    rc, out, err = run(["--db", db, "--max-bytes", "8K", "--quiet"], APPROF_MODULE_DIR=fake_dir)
    check(rc == 0 and err == "", "fake probe succeeds quietly (rc %d, %r)" % (rc, err))
    check("hardware 1: measured:Fake GPU 40GB" in out, "summary names the hardware row")
    con = sqlite3.connect(db)
    hw = con.execute("SELECT id, fingerprint, kind, gpus_per_host, device_memory, nccl_version,"
                     " peak_flops_f16, memory_bandwidth, intra_host_bandwidth, intra_host_latency"
                     " FROM hardware").fetchall()
    check(len(hw) == 1, "one hardware row")
    hid, fp, kind, gpus, mem, nccl, f16, membw, bw, lat = hw[0]
    check(fp == "measured:Fake GPU 40GB:2x40960MiB:driver 13.0:cuda 13.0:nccl 2.28.3",
          "fingerprint (%s)" % fp)
    check(kind == "measured" and gpus == 2 and mem == 40 << 30 and nccl == "2.28.3", "row fields")
    check(f16 == 280e12 and membw == 1.2e12, "best GEMM and memcpy rates")
    best = max(b / (2e-6 + b / 2e11) for b in (1024, 2048, 4096, 8192))
    check(abs(bw - best) <= 1e-9 * best and abs(lat - (2e-6 + 1024 / 2e11)) < 1e-15,
          "send-recv bandwidth and latency")
    ar = con.execute("SELECT bytes, seconds FROM comm_profile WHERE hardware_id = ? AND"
                     " collective = 'all-reduce' AND group_desc = '1x2' AND dtype = 'f32'"
                     " ORDER BY bytes", (hid,)).fetchall()
    check([b for b, _ in ar] == [1024, 2048, 4096, 8192], "all-reduce curve 1 KiB .. 8 KiB")
    check(all(abs(s - (1e-5 + b / 1e11)) < 1e-15 for b, s in ar), "all-reduce seconds")
    n = con.execute("SELECT count(*) FROM compute_profile WHERE hardware_id = ?", (hid,)).fetchone()[0]
    check(n == 3, "three compute points")
    # the GEMM shape grid: 6 x 6 x 6 shapes of the default grid, bf16 and f16
    shapes = con.execute("SELECT dtype, m, n, k, rate FROM gemm_profile WHERE hardware_id = ?"
                         " ORDER BY dtype, m, n, k", (hid,)).fetchall()
    grid = [512, 1024, 2048, 4096, 8192, 16384]
    check(len(shapes) == 2 * 216 and {d for d, *_ in shapes} == {"bf16", "f16"} and
          {m for _, m, _, _, _ in shapes} == set(grid), "216 GEMM shapes per dtype (%d)" % len(shapes))
    import math
    want = lambda d, m, n, k: (0.9 if d == "f16" else 1.0) * 1e12 * (
        10 + 10 * math.log2(m) + 20 * math.log2(n) + 40 * math.log2(k))
    check(all(abs(r - want(d, m, n, k)) <= 1e-12 * r for d, m, n, k, r in shapes), "GEMM shape rates")
    check("216 GEMM shape points" not in out and "432 GEMM shape points" in out,
          "summary counts the shape points")
    con.close()

    # --gemm-grid: its sizes, or none; a re-probe replaces the tables
    rc, out, err = run(["--db", db, "--max-bytes", "8K", "--quiet", "--gemm-grid", "2048,512"],
                       APPROF_MODULE_DIR=fake_dir)
    con = sqlite3.connect(db)
    shapes = con.execute("SELECT dtype, m, n, k FROM gemm_profile ORDER BY 1, 2, 3, 4").fetchall()
    con.close()
    check(rc == 0 and len(shapes) == 16 and shapes[0] == ("bf16", 512, 512, 512) and
          shapes[-1] == ("f16", 2048, 2048, 2048), "--gemm-grid 2048,512: 8 shapes per dtype")
    rc, out, err = run(["--db", db, "--max-bytes", "8K", "--quiet", "--gemm-grid", "none"],
                       APPROF_MODULE_DIR=fake_dir)
    con = sqlite3.connect(db)
    n = con.execute("SELECT count(*) FROM gemm_profile").fetchone()[0]
    con.close()
    check(rc == 0 and n == 16 and "0 GEMM shape points" in out,
          "--gemm-grid none measures none and keeps the stored tables")
    # approf hardware show counts the row's GEMM shape points per dtype
    show = subprocess.run([approf, "hardware", "show", "--db", db, "--hardware-id", "1"],
                          capture_output=True, text=True)
    check(show.returncode == 0 and
          "GEMM shape points bf16: 8 (2 x 2 x 2 sizes of m, n, k)\n" in show.stdout and
          "GEMM shape points f16: 8 (2 x 2 x 2 sizes of m, n, k)\n" in show.stdout,
          "hardware show: GEMM shape points per dtype (%r)" % show.stdout)
    show = subprocess.run([approf, "hardware", "show", "--db", db, "--hardware-id", "1",
                           "--format", "json"], capture_output=True, text=True)
    import json
    try:
        shapes = json.loads(show.stdout)["gemm_shapes"]
    except (ValueError, KeyError):
        shapes = None
    check(shapes == {"bf16": {"points": 8, "grid": [2, 2, 2], "complete": True},
                     "f16": {"points": 8, "grid": [2, 2, 2], "complete": True}},
          "hardware show --format json: gemm_shapes (%r)" % show.stdout)
    show = subprocess.run([approf, "hardware", "show", "--db", db, "--hardware-id", "7"],
                          capture_output=True, text=True)
    check(show.returncode == 1 and "no hardware row 7" in show.stderr, "hardware show: unknown row")
    # approf sweep --hardware-id prices an analytic sweep on that stored row
    sw = ["sweep", "--model", "gpt", "--preset", "gpt2-small", "--num-layers", "2", "--layers",
          "2", "--cluster", "1x2", "--hardware", "h100-sxm", "--backend", "model",
          "--micro-batches", "2", "--quiet", "--db", db]
    p = subprocess.run([approf] + sw + ["--hardware-id", "1"], capture_output=True, text=True)
    check(p.returncode == 0 and "GEMMs in bf16 from 8 measured shapes of hardware 1" in p.stderr,
          "sweep --hardware-id 1 prices GEMMs from the row's shapes (%r)" % p.stderr[-400:])
    p = subprocess.run([approf] + sw + ["--hardware-id", "99"], capture_output=True, text=True)
    check(p.returncode != 0 and "no hardware row 99" in p.stderr, "sweep --hardware-id 99 refused")
    p = subprocess.run([approf] + sw + ["--hardware-id", "x"], capture_output=True, text=True)
    check(p.returncode == 2 and "--hardware-id" in p.stderr, "sweep --hardware-id x exits 2")
    for bad in ["", "0", "512,512", "512,x", "512,", "70000", ",".join(str(i) for i in range(1, 14))]:
        rc, out, err = run(["--db", db, "--gemm-grid", bad], APPROF_MODULE_DIR=fake_dir)
        check(rc == 2 and "--gemm-grid" in err, "--gemm-grid '%s' exits 2" % bad)

    # A second probe reuses the row and replaces the curves.
    rc, out, err = run(["--db", db, "--max-bytes", "2K", "--quiet"], APPROF_MODULE_DIR=fake_dir)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT count(*) FROM hardware").fetchone()[0]
    ar = con.execute("SELECT bytes FROM comm_profile WHERE collective = 'all-reduce'").fetchall()
    con.close()
    check(rc == 0 and rows == 1 and sorted(b for b, in ar) == [1024, 2048],
          "re-probe keeps one row and replaces the curve")

    rc, out, err = run(["--db", db, "--max-bytes", "1K"], APPROF_MODULE_DIR=fake_dir)
    check(rc == 0 and "approf probe: fake probe done" in err, "progress lines without --quiet")

    # The overlap points of a 2-GPU probe: stored, the worse collective's
    # slowdown in the row's capabilities and printed as a spec line.
    odb = os.path.join(tmp, "overlap.db")
    rc, out, err = run(["--db", odb, "--max-bytes", "1K", "--gemm-grid", "none", "--quiet"],
                       APPROF_MODULE_DIR=fake_dir, FAKE_APPROF_OVERLAP="1")
    check(rc == 0 and "bf16 GEMM beside an NCCL all-reduce: 12.5% slower" in out and
          "    overlap_gemm_slowdown = 0.1250\n" in out, "overlap spec line (%r)" % out)
    con = sqlite3.connect(odb)
    caps = con.execute("SELECT capabilities FROM hardware").fetchone()[0]
    n = con.execute("SELECT count(*) FROM compute_profile WHERE op LIKE 'overlap-%'").fetchone()[0]
    con.close()
    check('"overlap_gemm_slowdown": 0.125}' in caps and n == 6,
          "overlap points stored, slowdown in the capabilities (%d, %s)" % (n, caps))
    check("overlap_gemm_slowdown" not in sqlite3.connect(db).execute(
        "SELECT capabilities FROM hardware").fetchone()[0], "no overlap points: no figure")

sys.exit(1 if failures else 0)
