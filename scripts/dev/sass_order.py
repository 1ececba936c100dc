#!/usr/bin/env python3
"""The order in which a Hopper kernel's SASS issues its GEMMs, waits and exponentials, per
function, from `cuobjdump -sass` output (no GPU needed):

    cuobjdump -sass build/CMakeFiles/fa_kernels.dir/generated/<instance>.cu.o > k.sass
    python3 scripts/dev/sass_order.py k.sass [--kernel SUBSTRING]

One line per function whose name contains SUBSTRING: its events in address order, runs of
the same event counted: `G` a wgmma (HGMMA/QGMMA), `W<n>` WARPGROUP.DEPBAR.LE (wait until at
most n wgmma groups are pending), `e` MUFU.EX2, `B` a barrier instruction (BAR.*), `^<addr>`
a branch back to <addr> (a loop's end); `@<addr>` gives where each run starts. It answers
"does the softmax run before or after the wait for P V" without a profiler
(docs/PERF_NOTES.md, fa3-softmax-under-pv). Exit 2 when the file holds no SASS function."""
import argparse
import re
import sys

INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);")
TARGET = re.compile(r"0x([0-9a-f]+)")


def functions(text):
    """(name, [(address, instruction)]) per `Function :` section."""
    out = []
    for part in re.split(r"\n\s*Function : ", text)[1:]:
        lines = part.split("\n")
        body = []
        for line in lines[1:]:
            m = INSTR.match(line)
            if m:
                body.append((int(m.group(1), 16), m.group(2)))
        out.append((lines[0].strip(), body))
    return out


def event(address, instr):
    op = re.sub(r"^@!?U?P\w+\s+", "", instr).split()[0]
    if op.startswith(("HGMMA", "QGMMA")):
        return "G"
    if op == "WARPGROUP.DEPBAR.LE":
        return "W" + str(int(instr.split()[-1], 16))
    if op == "MUFU.EX2":
        return "e"
    if op.startswith("BAR."):
        return "B"
    if "BRA" in op:
        m = TARGET.search(instr)
        if m and int(m.group(1), 16) < address:
            return "^" + hex(int(m.group(1), 16))
    return None


def order(body):
    runs = []  # [event, count, first address]
    for address, instr in body:
        e = event(address, instr)
        if e is None:
            continue
        if runs and runs[-1][0] == e:
            runs[-1][1] += 1
        else:
            runs.append([e, 1, address])
    return " ".join(f"{e}{'x' + str(n) if n > 1 else ''}@{hex(a)}" for e, n, a in runs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sass", help="cuobjdump -sass output")
    ap.add_argument("--kernel", default="", help="only functions whose name contains this")
    a = ap.parse_args(argv)
    with open(a.sass) as f:
        funcs = functions(f.read())
    if not funcs:
        print(f"sass_order.py: {a.sass}: no 'Function :' section (not cuobjdump -sass output?)", file=sys.stderr)
        return 2
    for name, body in funcs:
        if a.kernel in name:
            print(name)
            print("  " + order(body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
