#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Schema 17's temp_activation_size through `approf export`/`import` and
`approf show` (schemas/csv-format.md, schemas/README.md "Schema 17"):

- a sweep whose entries have an activation-sized transient exports the
  optional column temp_activation_size; importing that file gives the same
  values, so apsolve's cp=2 plan needs the same memory with the imported
  values as with the sweep's (before the column was carried, the import held
  NULL and the cp stage's transient was not divided). The CSV file holds no
  placements or hardware, which the cp step needs: the sweep's rows take the
  imported sweep's values key by key;
- the import exports byte-identically;
- `approf show` ends each line with "# temp_activation_size=X GB", or
  "=NULL" for an entry with none (an old CSV file without the column, which
  still imports);
- a bad value is refused naming FILE:LINE:COLUMN and the field, and the
  database keeps its sweeps.

Usage: csv_temp_activation.py APPROF APSOLVE
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile


def run(cmd, ok=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if ok and p.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def main():
    approf, apsolve = sys.argv[1:3]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "llama.db")
        back = os.path.join(tmp, "back.db")
        csv = os.path.join(tmp, "llama.csv")
        csv2 = os.path.join(tmp, "back.csv")
        run([approf, "sweep", "--db", db, "--quiet", "--model", "llama", "--preset", "llama-3-8b",
             "--num-layers", "2", "--layers", "2", "--seq-len", "8192", "--cluster", "1x2",
             "--hardware", "a100-40g", "--backend", "model", "--batch", "8",
             "--micro-batch-sizes", "2", "--zero", "0,3", "--recompute", "none"])
        run([approf, "export", "--db", db, "--output", csv])
        with open(csv) as f:
            lines = f.read().splitlines()
        header = lines[0].split(",")
        if "temp_activation_size" not in header:
            sys.exit("FAIL: the export has no temp_activation_size column: %s" % lines[0])
        k = header.index("temp_activation_size")
        with_act = [l for l in lines[1:] if l.split(",")[k]]
        if not with_act:
            sys.exit("FAIL: no exported line has a temp_activation_size")
        # import into a copy of the database (sweep 2): a CSV file holds
        # neither the placements nor the hardware that apsolve's cp step
        # prices from, so sweep 1 keeps those and takes its
        # temp_activation_size from the imported rows, key by key
        shutil.copy(db, back)
        con = sqlite3.connect(db)
        s = con.execute("SELECT cluster_hosts, cluster_gpus, global_batch, micro_batches"
                        " FROM sweep").fetchone()
        con.close()
        run([approf, "import", "--db", back, "--quiet", "--cluster", "%dx%d" % (s[0], s[1]),
             "--batch", str(s[2]), "--micro-batches", str(s[3]), csv])
        run([approf, "export", "--db", back, "--sweep", "2", "--output", csv2])
        with open(csv2) as f:
            if f.read().splitlines() != lines:
                fails.append("export -> import -> export is not byte-identical")

        def acts(path, sweep):
            con = sqlite3.connect(path)
            r = con.execute("SELECT e.start_layer, e.end_layer, e.submesh_index,"
                            " e.config_index, e.phase, c.peak_memory, c.temp_buffer_size,"
                            " c.temp_activation_size FROM stage_entry e JOIN stage_cost c ON"
                            " c.sweep_id = e.sweep_id AND c.cost_id = e.cost_id"
                            " WHERE e.sweep_id = ? ORDER BY 1, 2, 3, 4, 5", (sweep,)).fetchall()
            con.close()
            return r
        if acts(db, 1) != acts(back, 2):
            fails.append("the imported entries' sizes differ from the sweep's")
        con = sqlite3.connect(back)
        con.execute("UPDATE stage_cost SET temp_activation_size = NULL WHERE sweep_id = 1")
        con.execute(
            "UPDATE stage_cost AS c SET temp_activation_size = (SELECT c2.temp_activation_size"
            " FROM stage_entry e1 JOIN stage_entry e2 ON e2.sweep_id = 2 AND"
            " e2.start_layer = e1.start_layer AND e2.end_layer = e1.end_layer AND"
            " e2.submesh_index = e1.submesh_index AND e2.config_index = e1.config_index AND"
            " e2.phase = e1.phase JOIN stage_cost c2 ON c2.sweep_id = 2 AND"
            " c2.cost_id = e2.cost_id WHERE e1.sweep_id = 1 AND e1.cost_id = c.cost_id)"
            " WHERE c.sweep_id = 1")
        con.commit()
        con.close()

        def plan(path, par):
            p = run([apsolve, "--db", path, "--sweep", "1", "--no-store", "--format", "json",
                     "--quiet", "--micro-batch-size", "2", "--parallel", par])
            return json.loads(p.stdout)["plans"][0]["stages"][0]["memory_needed"]
        for par in ("dp=1,tp=1,pp=1,cp=2,zero=3", "dp=1,tp=1,pp=1,cp=2"):
            a, b = plan(db, par), plan(back, par)
            if a != b:
                fails.append("%s: memory %d from the sweep, %d after export and import"
                             % (par, a, b))
            else:
                print("%s: memory %d B from both" % (par, a))
        show = run([approf, "show", "--db", back, "--sweep", "2"]).stdout.splitlines()
        res = [l for l in show if l.startswith("result[")]
        if not all("  # temp_activation_size=" in l for l in res) or \
                not any(l.endswith(" GB") for l in res):
            fails.append("approf show does not end its lines with temp_activation_size")

        # an old file without the column still imports, NULL
        old = os.path.join(tmp, "old.csv")
        old_db = os.path.join(tmp, "old.db")
        with open(old, "w") as f:
            for l in lines:
                fl = l.split(",")
                f.write(",".join(fl[:k] + fl[k + 1:]) + "\n")
        run([approf, "import", "--db", old_db, "--quiet", old])
        if any(r[7] is not None for r in acts(old_db, 1)):
            fails.append("an old CSV file without the column imported a temp_activation_size")
        show = run([approf, "show", "--db", old_db]).stdout.splitlines()
        if not all(l.endswith("  # temp_activation_size=NULL") for l in show
                   if l.startswith("result[")):
            fails.append("approf show does not print NULL for an entry without one")

        # bad values: refused with FILE:LINE:COLUMN and the field, nothing imported
        line_no = lines.index(with_act[0]) + 1
        temp = header.index("temp_buffer_size")
        big = str(int(with_act[0].split(",")[temp]) + 1)
        for bad, what in (("x1", "not an integer"), ("-5", "negative"), ("0", "0 is not"),
                          (big, "more than temp_buffer_size")):
            f_bad = os.path.join(tmp, "bad.csv")
            with open(f_bad, "w") as f:
                for i, l in enumerate(lines):
                    fl = l.split(",")
                    if i + 1 == line_no:
                        fl[k] = bad
                    f.write(",".join(fl) + "\n")
            p = run([approf, "import", "--db", back, "--quiet", f_bad], ok=False)
            want = "%s:%d:%d: field 'temp_activation_size'" % (f_bad, line_no, k + 1)
            if p.returncode == 0 or want not in p.stderr or what not in p.stderr:
                fails.append("value %s: exit %d, stderr %r (want %r ... %r)"
                             % (bad, p.returncode, p.stderr, want, what))
            con = sqlite3.connect(back)
            n = con.execute("SELECT count(*) FROM sweep").fetchone()[0]
            con.close()
            if n != 2:
                fails.append("value %s: the database has %d sweeps after the refusal" % (bad, n))
    if fails:
        sys.exit("FAIL:\n" + "\n".join(fails))
    print("ok")


main()
