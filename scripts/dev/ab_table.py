#!/usr/bin/env python3
"""The table of scripts/dev/ab_sweep.sh: per (kernel family, head_dim, causal, seqlen), the
TFLOP/s of a.1, b.1, a.2, b.2 and mean(b)/mean(a); rows not `ok` are listed, not averaged;
`T` marks a point where any of the four rows is throttled by summarize.py's rule
(scripts/sm_clock.py: row_throttled, against the highest clock the four files read)."""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from sm_clock import max_clock_of, row_throttled  # noqa: E402


def main(out):
    runs = ("a.1", "b.1", "a.2", "b.2")
    rows, notes = [], []
    for run in runs:
        path = os.path.join(out, run + ".csv")
        if not os.path.exists(path):
            notes.append(f"{run}: no CSV (the sweep did not start or was cut before its first row)")
            continue
        with open(path, newline="") as f:
            rows += [(run, row) for row in csv.DictReader(f)]
    max_clock = max_clock_of([row for _, row in rows])
    table = {}
    for run, row in rows:
        key = (row["family"], int(row["head_dim"]), row["causal"], int(row["seqlen_q"]))
        if row["status"] != "ok":
            notes.append(f"{run} {row['kernel']} {key}: {row['status']} {row['reason'][:80]}")
            continue
        cell = table.setdefault(key, {})
        cell[run] = float(row["tflops"])
        if row_throttled(row, max_clock):
            cell["T"] = True
    print("| family | hd | causal | seqlen | a.1 | b.1 | a.2 | b.2 | b/a |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in sorted(table):
        cell = table[key]
        got = [cell.get(r) for r in runs]
        a = [x for x in (cell.get("a.1"), cell.get("a.2")) if x]
        b = [x for x in (cell.get("b.1"), cell.get("b.2")) if x]
        ratio = f"{(sum(b) / len(b)) / (sum(a) / len(a)):.3f}" if a and b else ""
        if cell.get("T"):
            ratio += " T"
        print("| " + " | ".join(str(k) for k in key) + " | " +
              " | ".join(f"{x:.4g}" if x else "" for x in got) + f" | {ratio} |")
    for n in notes:
        print(n)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
