#!/usr/bin/env python3
"""scripts/dev/sass_order.py on a hand-made cuobjdump listing: events in address order with
runs counted, predicated instructions read by their opcode, forward branches ignored and
back branches shown with their target, --kernel filtering; a file without SASS exits 2.
Exit 0 on success, 1 with what differed."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SASS = """
	code for sm_90a
		Function : _Z10consumer_aPv
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0010*/                   BAR.SYNC.DEFER_BLOCKING R2, 0x100 ;                  /* 0x0000000002007b1d */
        /*0020*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R88, gdesc[UR16], RZ, !UPT ;
        /*0030*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, R152, gdesc[UR20], R24, gsb0 ;
        /*0040*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0050*/              @P0  BRA 0x90 ;
        /*0060*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0070*/                   MUFU.EX2 R88, R88 ;
        /*0080*/                   MUFU.EX2 R89, R89 ;
        /*0090*/              @!P1 BRA 0x10 ;
		Function : _Z10producer_bPv
        /*0010*/                   MUFU.EX2 R4, R4 ;
"""
EXPECT = ["_Z10consumer_aPv", "  B@0x10 Gx2@0x20 W1@0x40 W0@0x60 ex2@0x70 ^0x10@0x90"]


def run(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "dev", "sass_order.py"), *args],
                          capture_output=True, text=True)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.sass")
        with open(path, "w") as f:
            f.write(SASS)
        r = run(path, "--kernel", "consumer")
        if r.returncode != 0 or r.stdout.splitlines() != EXPECT:
            failures.append(f"--kernel consumer: exit {r.returncode}\n{r.stdout}{r.stderr}")
        r = run(path)
        if r.returncode != 0 or r.stdout.splitlines()[2:] != ["_Z10producer_bPv", "  e@0x10"]:
            failures.append(f"all functions: exit {r.returncode}\n{r.stdout}{r.stderr}")
        empty = os.path.join(d, "empty.sass")
        with open(empty, "w") as f:
            f.write("not sass\n")
        r = run(empty)
        if r.returncode != 2 or "no 'Function :' section" not in r.stderr:
            failures.append(f"no SASS: exit {r.returncode}: {r.stderr}")
    for msg in failures:
        print("sass_order_test:", msg)
    print("sass_order_test:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
