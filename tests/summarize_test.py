#!/usr/bin/env python3
"""scripts/summarize.py on a hand-made CSV: the best tile of a family is kept, a
ratio is A over B, a row whose reason says `throttled`, or whose clock columns sit
more than 5 % below the highest clock in the file, is starred (and so is every ratio that
uses it), and other statuses show in place of a number. Exit 0 on
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


def main():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "rows.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(FIELDS)
            w.writerows(ROWS)
        out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "summarize.py"), path,
                              "--ratio", "fa2/torch.flash"], capture_output=True, text=True, check=True).stdout
    missing = [line for line in EXPECT if line not in out.splitlines()]
    if missing or "`*`: timed while the SM clock fell" not in out:
        print("summarize_test: unexpected output:\n" + out + "\nmissing: " + repr(missing))
        return 1
    print("summarize_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
