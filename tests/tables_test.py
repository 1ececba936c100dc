#!/usr/bin/env python3
"""scripts/tables.py on hand-made CSVs: the memory table puts each family's MiB and ms on
its seqlen's line, shows a status where a row is not ok, stars a throttled row; the traffic
table prints GB and leaves unread counters empty; the gpt2 table orders rows by pass, sums
read and written bytes, puts the paper's A100 numbers beside the fwd+bwd rows, marks an
unmodelled backward `-`, and prints the standard-over-flash ratios; a missing file exits 2.
Exit 0 on success, 1 with what differed."""
import csv
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ["kernel", "family", "seqlen_q", "status", "reason", "median_ms", "tflops", "peak_extra_bytes",
          "traffic_model_read_bytes", "traffic_model_write_bytes", "traffic_measured_read_bytes",
          "traffic_measured_write_bytes", "l2_hit_rate_pct", "clock_before_mhz", "clock_after_mhz"]
# Absent values are empty cells (schema 2).
ROWS = [
    ["standard", "standard", "512", "ok", "", "0.5", "10", str(96 * 2**20), "4698000000", "4433000000",
     "4698000000", "4432000000", "51.25", "1980", "1980"],
    ["fa2.x", "fa2", "512", "ok", "", "0.25", "20", "0", "2282000000", "138000000", "", "", "",
     "1980", "1700"],
    ["standard", "standard", "1024", "oom", "needs 512 GiB", "", "", "", "4698000000", "4433000000", "", "", "",
     "", ""],
    ["fa2.x", "fa2", "1024", "ok", "", "1.0", "20", "0", "1", "1", "", "", "", "1980", "1980"],
]
EXPECT = {
    "memory": ["| seqlen | standard MiB | standard ms | fa2 MiB | fa2 ms |",
               "| 512 | 96.0 | 0.500 | 0.0 | 0.250* |",
               "| 1024 | oom |  | 0.0 | 1.000 |"],
    "traffic": ["| standard | 0.500 | 10.0 | 4.698 | 4.433 | 4.698 | 4.432 | 51.2 | 100663296 |",
                "| fa2.x | 0.250* | 20.0 | 2.282 | 0.138 |  |  |  | 0 |",
                "| standard | oom |"],
}


GPT2_FIELDS = ["kernel", "family", "pass", "status", "reason", "median_ms", "tflops", "traffic_model_read_bytes",
               "traffic_model_write_bytes", "traffic_measured_read_bytes", "traffic_measured_write_bytes",
               "clock_before_mhz", "clock_after_mhz"]
GPT2_ROWS = [
    ["standard.bwd.fp16", "standard", "fwd+bwd", "ok", "", "20", "10", "30000000000", "10000000000",
     "25000000000", "11000000000", "1980", "1980"],
    ["fa2.bwd.fp16.hd64.128x128.w8.s2", "fa2", "fwd+bwd", "ok", "", "4", "50", "3000000000", "1000000000",
     "2000000000", "500000000", "1980", "1980"],
    ["cudnn.bwd.fp16", "cudnn", "bwd", "ok", "", "2", "60", "0", "0", "1500000000", "400000000", "1980", "1980"],
    ["standard.fp16", "standard", "fwd", "ok", "", "5", "65", "4698000000", "4433000000", "", "", "1980", "1980"],
    ["fa1.bwd.fp16.hd64.64x128.w8.s2", "fa1", "fwd+bwd", "oom", "no memory", "", "", "0", "0", "", "", "-1", "-1"],
]
GPT2_EXPECT = [
    "| kernel | pass | ms | TFLOP/s | HBM GB model | HBM GB measured | paper A100 GB | paper A100 ms |",
    "| standard.fp16 | fwd | 5.000 | 65.0 | 9.131 |  |  |  |",
    "| cudnn.bwd.fp16 | bwd | 2.000 | 60.0 | - | 1.900 |  |  |",
    "| standard.bwd.fp16 | fwd+bwd | 20.000 | 10.0 | 40.000 | 36.000 | 40.3 | 41.7 |",
    "| fa2.bwd.fp16.hd64.128x128.w8.s2 | fwd+bwd | 4.000 | 50.0 | 4.000 | 2.500 | 4.4 | 7.3 |",
    "| fa1.bwd.fp16.hd64.64x128.w8.s2 | fwd+bwd | oom |",
    "fwd+bwd, standard over fa2: 14.4x the HBM bytes, 5.0x the time (the paper, over FlashAttention: 9.2x, 5.7x)",
]


def run(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "tables.py"), *args],
                          capture_output=True, text=True)


def main():
    problems = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(FIELDS)
            w.writerows(ROWS)
        for table, lines in EXPECT.items():
            out = run(table, path)
            if out.returncode != 0:
                problems.append(f"{table}: exit {out.returncode}: {out.stderr}")
            got = out.stdout.splitlines()
            for want in lines:
                if not any(line.startswith(want) for line in got):
                    problems.append(f"{table}: missing line: {want}\n--- output:\n{out.stdout}")
        gpt2 = os.path.join(d, "gpt2.csv")
        with open(gpt2, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(GPT2_FIELDS)
            w.writerows(GPT2_ROWS)
        out = run("gpt2", gpt2)
        got = out.stdout.splitlines()
        if out.returncode != 0:
            problems.append(f"gpt2: exit {out.returncode}: {out.stderr}")
        for want in GPT2_EXPECT:
            if not any(line.startswith(want) for line in got):
                problems.append(f"gpt2: missing line: {want}\n--- output:\n{out.stdout}")
        # fwd, then bwd, then fwd+bwd, each in file order.
        order = [line.split(" | ")[0][2:] for line in got[2:7]]
        if order != ["standard.fp16", "cudnn.bwd.fp16", "standard.bwd.fp16", "fa2.bwd.fp16.hd64.128x128.w8.s2",
                     "fa1.bwd.fp16.hd64.64x128.w8.s2"]:
            problems.append(f"gpt2: row order {order}")
        missing = run("memory", os.path.join(d, "none.csv"))
        if missing.returncode != 2:
            problems.append(f"missing file: exit {missing.returncode}, want 2")
    if problems:
        print("\n".join(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
