#!/usr/bin/env python3
"""scripts/dev/sass_stalls.py on a hand-made ncu source-page CSV: shares are of all stall
samples; instructions group by execution count; --range keeps one address span; a file
without ncu's header exits 2. Exit 0 on success, 1 with what differed."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSV = '''"Kernel Name","k(Args)",
"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_long_sb","stall_wait","stall_long_sb (Not Issued)"
"0x7f00000a0010","HGMMA.64x128x16.F32.BF16 R24","30","400","0","30","0"
"0x7f00000a0020","WARPGROUP.DEPBAR.LE gsb0, 0x0","20","400","0","20","0"
"0x7f00000b0010","STG.E desc[UR8][R24.64], R29","10","100","0","10","0"
"0x7f00000b0020","IMAD.MOV.U32 R25, RZ, RZ, 0x1","40","100","40","0","40"
'''
EXPECT = [
    "4 instructions, 100 samples",
    "reasons: long_sb 40.0 %, wait 60.0 %",
    "         400:     2 instructions, 50.0 %",
    "         100:     2 instructions, 50.0 %",
    "  b0020      100  40.0 %  IMAD.MOV.U32 R25, RZ, RZ, 0x1  [long_sb 40]",
]
EXPECT_RANGE = ["2 instructions, 100 samples (shares of the whole kernel)", "reasons: long_sb 40.0 %, wait 10.0 %"]


def run(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "dev", "sass_stalls.py"), *args],
                          capture_output=True, text=True)


def main():
    problems = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "sass.csv")
        with open(path, "w") as f:
            f.write(CSV)
        for args, want in (((path,), EXPECT), ((path, "--range", "b0000", "b00ff"), EXPECT_RANGE)):
            out = run(*args)
            lines = out.stdout.splitlines()
            for w in want:
                # reasons are sorted by share; compare as sets for that line
                ok = any(line == w or (w.startswith("reasons:") and line.startswith("reasons:") and
                                       set(line[9:].split(", ")) == set(w[9:].split(", "))) for line in lines)
                if not ok:
                    problems.append(f"{args[1:]}: missing line: {w}\n--- output:\n{out.stdout}{out.stderr}")
        bad = os.path.join(d, "bad.csv")
        with open(bad, "w") as f:
            f.write("a,b\n1,2\n")
        if run(bad).returncode != 2:
            problems.append("a file without ncu's header: exit is not 2")
    if problems:
        print("\n".join(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
