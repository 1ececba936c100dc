#!/usr/bin/env python3
"""scripts/dev/ab_table.py on hand-made CSVs: b/a is the mean of the two B runs over the
mean of the two A runs; a point with one side missing gets no ratio; a row flagged
throttled marks its point `T`; rows that are not ok are listed, not averaged; a missing
run is reported. Exit 0 on success, 1 with what differed."""
import csv
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ["kernel", "family", "head_dim", "causal", "seqlen_q", "status", "reason", "tflops"]
RUNS = {
    "a.1": [["fa1.x", "fa1", "256", "true", "16384", "ok", "", "100"],
            ["fa1.x", "fa1", "256", "false", "4096", "ok", "", "140"],
            ["fa1.x", "fa1", "64", "false", "4096", "ok", "", "50"]],
    "b.1": [["fa1.y", "fa1", "256", "true", "16384", "ok", "", "110"],
            ["fa1.y", "fa1", "256", "false", "4096", "ok",
             "throttled: SM clock 1785 -> 1965 MHz while timing", "150"],
            ["fa1.y", "fa1", "64", "false", "4096", "fail", "O max abs error", "0"]],
    "a.2": [["fa1.x", "fa1", "256", "true", "16384", "ok", "", "102"],
            ["fa1.x", "fa1", "256", "false", "4096", "ok", "", "140"]],
    # b.2 is missing: the sweep never wrote its CSV.
}
EXPECT_LINES = [
    "| fa1 | 256 | true | 16384 | 100 | 110 | 102 |  | 1.089 |",
    "| fa1 | 256 | false | 4096 | 140 | 150 | 140 |  | 1.071 T |",
    "| fa1 | 64 | false | 4096 | 50 |  |  |  |  |",
]
EXPECT_NOTES = ["b.2: no CSV", "b.1 fa1.y ('fa1', 64, 'false', 4096): fail O max abs error"]


def main():
    with tempfile.TemporaryDirectory() as d:
        for run, rows in RUNS.items():
            with open(os.path.join(d, run + ".csv"), "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(FIELDS)
                w.writerows(rows)
        out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "dev", "ab_table.py"), d],
                             capture_output=True, text=True)
    problems = []
    if out.returncode != 0:
        problems.append(f"exit {out.returncode}: {out.stderr}")
    lines = out.stdout.splitlines()
    for want in EXPECT_LINES:
        if want not in lines:
            problems.append(f"missing line: {want}")
    for want in EXPECT_NOTES:
        if not any(line.startswith(want) for line in lines):
            problems.append(f"missing note: {want}")
    if problems:
        print("\n".join(problems + ["--- output:", out.stdout]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
