#!/usr/bin/env python3
"""scripts/torch_peers.py without torch or a GPU: the pass option (flag, config key,
bad values exit 2 before any file is written), the FLOP convention per pass, and the
CSV columns (the forward's, plus `pass` and schema 2's `l2_hit_rate_pct`), the --devices list. Exit 0 on success, 1 with what differed."""
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "scripts", "torch_peers.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import torch_peers  # noqa: E402

# A CSV torch_peers.py wrote on the H200 before the backward pass existed: forward rows
# must keep its columns, in its order, and its cells byte for byte, with only `pass` and
# schema 2's `l2_hit_rate_pct` (empty: PyTorch's rows are not profiled) added.
ADDED = ("pass", "l2_hit_rate_pct")
FORWARD_CSV = os.path.join(HERE, "data", "torch", "torch-paper-fwd-6e29ed4.csv")


def check_passes(bad):
    tp = torch_peers
    if tp.passes_of(None, {}, "c.json") != ["fwd"]:
        bad.append("no --pass and no config key did not default to fwd")
    if tp.passes_of("fwd,bwd,fwd+bwd", {}, "c.json") != ["fwd", "bwd", "fwd+bwd"]:
        bad.append("--pass fwd,bwd,fwd+bwd was not read in order")
    if tp.passes_of(" bwd , bwd ", {}, "c.json") != ["bwd"]:
        bad.append("--pass ' bwd , bwd ' did not give [bwd]")
    if tp.passes_of(None, {"pass": ["fwd+bwd", "fwd"]}, "c.json") != ["fwd+bwd", "fwd"]:
        bad.append("the config's pass list was not read")
    if tp.passes_of(None, {"pass": "bwd"}, "c.json") != ["bwd"]:
        bad.append("the config's pass string was not read")
    if tp.passes_of("fwd", {"pass": "bwd"}, "c.json") != ["fwd"]:
        bad.append("--pass did not override the config")
    for value, cfg, words in (("backward", {}, ["--pass", "backward"]),
                              (None, {"pass": "sideways"}, ["c.json", "'pass'", "sideways"]),
                              ("", {}, ["--pass"])):
        try:
            tp.passes_of(value, cfg, "c.json")
            bad.append(f"pass {value!r} / config {cfg} was accepted")
        except tp.UsageError as e:
            if not all(w in str(e) for w in words):
                bad.append(f"the message {str(e)!r} does not name {words}")


def check_flops(bad):
    # The FlashAttention convention: forward 4 b h s_q s_k d (two matmuls), backward 2.5x
    # (five matmuls), both 3.5x; causal halves each.
    b, h, nq, nk, d = 2, 3, 5, 7, 11
    fwd = 4.0 * b * h * nq * nk * d
    for pass_, factor in (("fwd", 1.0), ("bwd", 2.5), ("fwd+bwd", 3.5)):
        for causal, half in ((False, 1.0), (True, 0.5)):
            got = torch_peers.attention_flops(b, h, nq, nk, d, causal, pass_)
            if got != fwd * factor * half:
                bad.append(f"{pass_} causal={causal}: {got} FLOPs, expected {fwd * factor * half}")


def check_columns(bad):
    cols = list(torch_peers.COLUMNS)
    with open(FORWARD_CSV, newline="") as f:
        old_lines = f.read().splitlines()
    with open(FORWARD_CSV, newline="") as f:
        old_rows = list(csv.DictReader(f))
    if [c for c in cols if c not in ADDED] != old_lines[0].split(","):
        bad.append(f"the columns other than {ADDED} are not those of {FORWARD_CSV}, in order")
    if cols.count("pass") != 1 or cols.index("pass") != cols.index("backend") + 1:
        bad.append("`pass` is not one column right after `backend`")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rows.csv")
        torch_peers.write_rows(path, [dict(r, **{"pass": "fwd"}) for r in old_rows[:5]])
        with open(path, newline="") as f:
            new_lines = f.read().splitlines()
        with open(path, newline="") as f:
            back = list(csv.DictReader(f))
        if new_lines[0] != ",".join(cols):
            bad.append(f"the CSV header is {new_lines[0]!r}")
        added_at = {cols.index(c) for c in ADDED}
        without_added = [",".join(c for i, c in enumerate(line.split(",")) if i not in added_at)
                         for line in new_lines[1:]]
        if without_added != old_lines[1:6]:
            bad.append(f"forward rows rewritten with {ADDED} cells differ elsewhere from the H200 CSV")
        if [r["pass"] for r in back] != ["fwd"] * 5:
            bad.append(f"the pass cells read back as {[r['pass'] for r in back]}")
        if os.path.exists(path + ".tmp"):
            bad.append("write_rows left its temporary file")


def check_devices(bad):
    """--devices: fa-bench's rules (device numbers each once, or all), checked without torch."""
    tp = torch_peers
    if tp.parse_devices("all") != "all" or tp.parse_devices(" 1, 0 ") != [1, 0]:
        bad.append("--devices all / ' 1, 0 ' were not read")
    for text, words in (("0,0", ["appears twice"]), ("", ["empty value"]), ("0,", ["empty entry"]),
                        ("-1", ["'-1' is not a device number"]), ("abc", ["'abc' is not a device number"]),
                        ("1.0", ["not a device number"]), ("64", ["out of range"]), ("all,1", ["not a device"])):
        try:
            tp.parse_devices(text)
            bad.append(f"--devices {text!r} was accepted")
        except tp.UsageError as e:
            if not all(w in str(e) for w in ["--devices", *words]):
                bad.append(f"--devices {text!r}: the message {str(e)!r} does not name {words}")
    if list(tp.COLUMNS[-1:]) != ["seed"] or any(c in tp.COLUMNS for c in tp.DEVICE_COLUMNS):
        bad.append("the device columns are among the columns of a run without --devices")


def check_cli(bad):
    """Bad input exits 2 with a message naming the value and flag, before torch is imported
    (this machine has none) and before the output file exists."""
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good.json")
        with open(good, "w") as f:
            json.dump({"seqlen": 128, "head_dim": 64}, f)
        sideways = os.path.join(tmp, "sideways.json")
        with open(sideways, "w") as f:
            json.dump({"seqlen": 128, "pass": ["fwd", "sideways"]}, f)
        out = os.path.join(tmp, "out.csv")
        cases = (
            ([good, "--out", out, "--pass", "fwd,bwdd"], ["--pass", "bwdd"]),
            ([good, "--out", out, "--backends", "flash,nope"], ["--backends", "nope"]),
            ([sideways, "--out", out], ["sideways.json", "'pass'", "sideways"]),
            ([os.path.join(tmp, "missing.json"), "--out", out], ["missing.json"]),
            ([good, "--out", out, "--devices", "0,0"], ["--devices", "appears twice"]),
            ([good, "--out", out, "--devices", "gpu1"], ["--devices", "gpu1"]),
        )
        for argv, words in cases:
            r = subprocess.run([sys.executable, SCRIPT, *argv], capture_output=True, text=True, timeout=60)
            if r.returncode != 2:
                bad.append(f"{argv[1:]}: exit {r.returncode}, expected 2 ({r.stderr.strip()[-200:]})")
            elif not all(w in r.stderr for w in words):
                bad.append(f"{argv[1:]}: stderr {r.stderr.strip()!r} does not name {words}")
            if os.path.exists(out):
                bad.append(f"{argv[1:]}: {out} was created")
        args, _ = torch_peers.parse_args([good, "--out", out, "--pass", "bwd,fwd+bwd", "--backends", "cudnn"])
        if args.passes != ["bwd", "fwd+bwd"] or args.backends != ["cudnn"]:
            bad.append(f"parse_args gave passes {args.passes}, back ends {args.backends}")


def main():
    bad = []
    check_passes(bad)
    check_flops(bad)
    check_columns(bad)
    check_devices(bad)
    check_cli(bad)
    if bad:
        print("torch_peers_test: " + "; ".join(bad))
        return 1
    print("torch_peers_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
