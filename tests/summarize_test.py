#!/usr/bin/env python3
"""scripts/summarize.py on a hand-made CSV: the best tile of a family is kept, a
ratio is A over B, a row whose reason says `throttled`, or whose clock columns sit
more than 5 % below the highest clock in the file, is starred (and so is every ratio that
uses it), and other statuses show in place of a number; rows of another pass than
--pass (default fwd; no `pass` column: forward) are left out; a cudnn_fp8_check CSV
is the `cudnn` series only at points where an e4m3 sweep has no cudnn row. Exit 0 on
success, 1 with what differed."""
import csv
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ["kernel", "family", "backend", "head_dim", "causal", "seqlen_q", "dtype", "status", "reason", "tflops",
          "clock_before_mhz", "clock_after_mhz"]
ROWS = [
    ["fa2.bf16.hd128.128x32.w4.s2", "fa2", "cuda", "128", "false", "4096", "bf16", "ok", "", "300", "1980", "1980"],
    ["fa2.bf16.hd128.128x64.w4.s2", "fa2", "cuda", "128", "false", "4096", "bf16", "ok", "", "360", "1965", "1980"],
    ["torch.flash", "fa2", "cuda", "128", "false", "4096", "bf16", "ok",
     "throttled: SM clock fell from 1980 to 1700 MHz while timing", "340", "1980", "1700"],
    ["fa2.bf16.hd128.128x64.w4.s2", "fa2", "cuda", "128", "true", "4096", "bf16", "fail", "O max abs error", "",
     "1980", "1980"],
    ["torch.flash", "fa2", "cuda", "128", "true", "4096", "bf16", "ok", "", "300", "1980", "1980"],
    # Timed after the clock had dropped (steady at 1635-1695): no fall, but below the 1980 maximum.
    ["fa2.bf16.hd128.128x64.w4.s2", "fa2", "cuda", "128", "false", "8192", "bf16", "ok", "", "320", "1635", "1695"],
    ["torch.flash", "fa2", "cuda", "128", "false", "8192", "bf16", "ok", "", "330", "", ""],
]
EXPECT = [
    "| 128 | no | 4096 | 360.0 | 340.0* | 1.06* |",
    "| 128 | no | 8192 | 320.0* | 330.0 | 0.97* |",
    "| 128 | yes | 4096 | fail | 300.0 | - |",
]
# A file with the pass column (a sweep run with --pass, or torch_peers.py): its backward
# rows would beat the forward ones above if they were pooled with them.
PASS_FIELDS = FIELDS + ["pass"]
PASS_ROWS = [
    ["fa2.bwd.bf16.hd128.128x128.w8.s2", "fa2", "cuda", "128", "false", "4096", "bf16", "ok", "", "900", "1980",
     "1980", "bwd"],
    ["torch.flash", "fa2", "cuda", "128", "false", "4096", "bf16", "ok", "", "600", "1980", "1980", "bwd"],
    ["fa2.bwd.bf16.hd128.128x128.w8.s2", "fa2", "cuda", "128", "false", "4096", "bf16", "ok", "", "800", "1980",
     "1980", "fwd+bwd"],
]
EXPECT_BWD = ["| 128 | no | 4096 | 900.0 | 600.0 | 1.50 |"]
# An e4m3 sweep with fa3 and cudnn (the `cudnn` row at 4096 only), and cudnn_fp8_check's
# CSV at 4096 and 8192: the sweep's 950 at 4096, the timer's 1000 at 8192.
E4M3_FIELDS = FIELDS + ["batch", "heads"]
E4M3_ROWS = [
    ["fa3.e4m3.hd128.128x128.w12.s2", "fa3", "cuda", "128", "false", "4096", "e4m3", "ok", "", "760", "1980", "1980",
     "4", "16"],
    ["cudnn.e4m3", "cudnn", "cuda", "128", "false", "4096", "e4m3", "ok", "", "950", "1980", "1980", "4", "16"],
    ["fa3.e4m3.hd128.128x128.w12.s2", "fa3", "cuda", "128", "false", "8192", "e4m3", "ok", "", "810", "1980", "1980",
     "2", "16"],
]
TIMER_FIELDS = ["impl", "dtype", "o_type", "causal", "hdim", "seqlen", "batch", "heads", "ms", "tflops", "check"]
TIMER_ROWS = [
    ["cudnn_fp8", "e4m3", "e4m3", "0", "128", "4096", "4", "16", "0.57", "963.3", "PASS"],
    ["cudnn_fp8", "e4m3", "e4m3", "0", "128", "8192", "2", "16", "1.09", "1000.0", "PASS"],
]
EXPECT_E4M3 = ["| 128 | no | 4096 | 760.0 | 950.0 | 0.80 |", "| 128 | no | 8192 | 810.0 | 1000.0 | 0.81 |"]


def write(path, fields, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(fields)
        w.writerows(rows)


def summarize(*args, ratio="fa2/torch.flash"):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "summarize.py"), *args,
                           "--ratio", ratio], capture_output=True, text=True, check=True).stdout


def main():
    with tempfile.TemporaryDirectory() as d:
        path, with_pass = os.path.join(d, "rows.csv"), os.path.join(d, "passes.csv")
        write(path, FIELDS, ROWS)
        write(with_pass, PASS_FIELDS, PASS_ROWS)
        out = summarize(path, with_pass)
        out_bwd = summarize(path, with_pass, "--pass", "bwd")
        sweep, timer = os.path.join(d, "e4m3.csv"), os.path.join(d, "cudnn-fp8.csv")
        write(sweep, E4M3_FIELDS, E4M3_ROWS)
        write(timer, TIMER_FIELDS, TIMER_ROWS)
        out_e4m3 = summarize(sweep, timer, "--dtype", "e4m3", ratio="fa3/cudnn")
    missing = [line for line in EXPECT if line not in out.splitlines()]
    if missing or "`*`: timed while the SM clock fell" not in out:
        print("summarize_test: unexpected output:\n" + out + "\nmissing: " + repr(missing))
        return 1
    missing = [line for line in EXPECT_BWD if line not in out_bwd.splitlines()]
    if missing or "| 128 | no | 8192 |" in out_bwd:
        print("summarize_test: unexpected --pass bwd output:\n" + out_bwd + "\nmissing: " + repr(missing))
        return 1
    missing = [line for line in EXPECT_E4M3 if line not in out_e4m3.splitlines()]
    if missing or "963.3" in out_e4m3:
        print("summarize_test: unexpected e4m3 output:\n" + out_e4m3 + "\nmissing: " + repr(missing))
        return 1
    print("summarize_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
