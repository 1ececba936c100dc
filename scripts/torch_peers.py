#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention back ends as peers of our kernels.

  torch_peers.py configs/paper-fwd.json --out torch.csv [--backends flash,cudnn,efficient,math]
                 [--pass fwd,bwd,fwd+bwd] [--devices 0,1|all]

Reads a config's points the way the sweep does (seqlen axis "512:16384:x2" or a
list; batch = total_tokens / seqlen when total_tokens is set; heads = hidden /
head_dim when hidden is set; head_dim, causal, dtype lists), runs each back end
through torch.nn.attention.sdpa_kernel on BSHD buffers (the layout fa-bench uses,
handed to torch as [b, h, s, d] views) and writes rows in fa-bench's CSV schema
(docs/OUTPUTS.md), so plots and compare put them beside our kernels.

Kernel names are torch.<backend>; the family column takes the closest of ours
(flash -> fa2, since PyTorch's flash back end is FlashAttention-2; efficient -> fa2,
a tiled online-softmax kernel; cudnn -> cudnn; math -> standard).

Passes (--pass, or the config's "pass" key; a list, the words of fa-bench's pass
axis; default fwd): fwd times the forward; bwd times the backward alone,
torch.autograd.grad(out, (q, k, v), dout) after one forward outside the timed
region (retain_graph, so each sample replays the same backward); fwd+bwd times
the forward and that backward together. dO is seeded normal in the BSHD layout.
FLOPs by the FlashAttention convention: forward 4 b h s_q s_k d, backward 2.5x
that (five matmuls to two), fwd+bwd 3.5x, causal halved. The CSV's `pass`
column says which.

Timing: 3 warm-up calls, then samples until the relative noise (p90 - p10) / 2 /
median is under --target-noise with at least --min-samples, at most --max-samples
or --max-seconds; before each sample a buffer of 2x the L2 size is written (cold
L2), then a 100 us stream hold so Python's dispatch stays outside the events; CUDA
events around the call; the median is quoted. The SM clock is read through NVML
before and after each row and judged by fa-bench's throttle rule (scripts/sm_clock.py:
a drop of more than 5 %, or more than 5 % below the maximum clock). Inputs are seeded normal
(never zeros). Errors: O against a float64 reference on up to 64 sampled query rows
(all batches and heads), for every pass (the backward passes run the forward
too); a backward pass also counts non-finite dQ/dK/dV in `nonfinite` and prints dQ's
max abs error on the same rows (no CSV column holds gradient errors). A back end
that refuses a shape is a row with status `unsupported`; an allocation failure is
`oom`. Bad arguments exit 2 before anything is written.

Devices (--devices LIST|all, as fa-bench's; default: the one device torch calls
cuda:0, rows without device columns): one worker process per device, each
started with CUDA_VISIBLE_DEVICES naming its device alone (an entry of the
caller's CUDA_VISIBLE_DEVICES when that is set: the numbers count from 0
within it, as fa-bench's do). Points go in config order to whichever worker is
free; a point's rows are all timed on one device; the CSV gets every point's
rows in config order, written once every earlier point's are (rows finished
behind a point a worker never finished are written at the end), with
device_index, device_name and device_uuid columns. A worker that dies gives
its point `error` rows and takes no more points.
"""
import argparse
import csv
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

from sm_clock import SmClock, throttle_reason  # scripts/ is on sys.path when run as a script

COLUMNS = ("kernel family backend pass batch heads heads_kv seqlen_q seqlen_k head_dim causal dtype "
           "softmax_scale block_m block_n warps stages status reason median_ms min_ms p10_ms p90_ms "
           "mean_ms stddev_ms samples noise timing_method tflops matmul_fraction "
           "traffic_model_read_bytes traffic_model_write_bytes model_bandwidth_gbps "
           "traffic_measured_read_bytes traffic_measured_write_bytes traffic_measured_source "
           "l2_hit_rate_pct peak_extra_bytes o_max_abs o_max_rel o_rel_l2 lse_max_abs lse_max_rel nonfinite "
           "rows_checked sampled tolerance clock_before_mhz clock_after_mhz seed").split()

# fa-bench's per-row device columns, written only by a run with --devices.
DEVICE_COLUMNS = ("device_index", "device_name", "device_uuid")
MAX_DEVICES = 64  # fa-bench's limit

FAMILY = {"flash": "fa2", "efficient": "fa2", "cudnn": "cudnn", "math": "standard"}
BACKENDS = ("flash", "cudnn", "efficient", "math")
PASSES = ("fwd", "bwd", "fwd+bwd")  # fa-bench's pass axis
FLOP_FACTOR = {"fwd": 1.0, "bwd": 2.5, "fwd+bwd": 3.5}
# Stream hold before each sample, long enough that Python's dispatch (autograd's
# included) happens while the GPU is busy.
HOLD_US = {"fwd": 100, "bwd": 500, "fwd+bwd": 500}


class UsageError(Exception):
    """Bad user input: the message names the value and where it came from."""


def parse_list(value, known, source, what):
    """A comma-separated string or a list -> the items in order, duplicates dropped."""
    items = value if isinstance(value, list) else str(value).split(",")
    out = []
    for item in (str(i).strip() for i in items):
        if item not in known:
            raise UsageError(f"{source}: unknown {what} '{item}' (known: {', '.join(known)})")
        if item not in out:
            out.append(item)
    if not out:
        raise UsageError(f"{source}: no {what} given")
    return out


def passes_of(cli_value, cfg, config_path):
    """--pass when given, else the config's "pass" key, else fwd."""
    if cli_value is not None:
        return parse_list(cli_value, PASSES, "--pass", "pass")
    if "pass" in cfg:
        return parse_list(cfg["pass"], PASSES, f"{config_path}: key 'pass'", "pass")
    return ["fwd"]


def parse_devices(text, source="--devices"):
    """"all" -> "all"; "0,1" -> [0, 1]: device numbers 0..63, each once (fa-bench's rules)."""
    expected = f"expected device numbers 0 to {MAX_DEVICES - 1}, each once (e.g. 0,1), or all"
    text = str(text)
    if not text.strip():
        raise UsageError(f"{source}: empty value; {expected}")
    if text.strip() == "all":
        return "all"
    out = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            raise UsageError(f"{source}: empty entry in '{text}'; {expected}")
        if not (item.isascii() and item.isdigit()):
            raise UsageError(f"{source}: '{item}' is not a device number (in '{text}'); {expected}")
        if int(item) >= MAX_DEVICES:
            raise UsageError(f"{source}: '{item}' is out of range (in '{text}'); {expected}")
        if int(item) in out:
            raise UsageError(f"{source}: device {int(item)} appears twice in '{text}'; {expected}")
        out.append(int(item))
    return out


def attention_flops(b, h, nq, nk, d, causal, pass_):
    return FLOP_FACTOR[pass_] * 4.0 * b * h * nq * nk * d * (0.5 if causal else 1.0)


def parse_axis(value):
    """An axis as the sweep writes it: a number, a list, or "a:b:xK" / "a:b:+K" ranges, comma-joined."""
    if isinstance(value, list):
        out = []
        for v in value:
            out += parse_axis(v)
        return out
    if isinstance(value, (int, float, bool)):
        return [value]
    out = []
    for part in str(value).split(","):
        part = part.strip()
        if ":" in part:
            start, stop, step = part.split(":")
            x, stop = int(start), int(stop)
            while x <= stop:
                out.append(x)
                x = x * int(step[1:]) if step.startswith("x") else x + int(step.lstrip("+"))
        else:
            out.append(int(part))
    return out


def points(cfg):
    dtypes = cfg.get("dtype", "bf16")
    dtypes = dtypes if isinstance(dtypes, list) else [dtypes]
    causals = cfg.get("causal", [False])
    causals = causals if isinstance(causals, list) else [causals]
    for dtype in dtypes:
        for hd in parse_axis(cfg.get("head_dim", 64)):
            for causal in causals:
                for n in parse_axis(cfg.get("seqlen", 1024)):
                    nq = parse_axis(cfg["seqlen_q"])[0] if "seqlen_q" in cfg else n
                    nk = parse_axis(cfg["seqlen_k"])[0] if "seqlen_k" in cfg else n
                    batch = cfg["total_tokens"] // n if "total_tokens" in cfg else parse_axis(cfg.get("batch", 1))[0]
                    heads = cfg["hidden"] // hd if "hidden" in cfg else parse_axis(cfg.get("heads", 1))[0]
                    heads_kv = parse_axis(cfg.get("heads_kv", heads))[0]
                    yield dict(batch=max(batch, 1), heads=heads, heads_kv=heads_kv, seqlen_q=nq,
                               seqlen_k=nk, head_dim=hd, causal=bool(causal), dtype=dtype)


def summarize(samples):
    s = sorted(samples)
    q = lambda f: s[int(f * (len(s) - 1))]
    med = statistics.median(s)
    return dict(median_ms=med, min_ms=s[0], p10_ms=q(0.1), p90_ms=q(0.9), mean_ms=statistics.fmean(s),
                stddev_ms=statistics.pstdev(s), samples=len(s), noise=(q(0.9) - q(0.1)) / 2 / med)


def parse_args(argv=None):
    """Arguments and the config, checked before torch is imported or a file written."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config")
    ap.add_argument("--out", required=True)
    ap.add_argument("--backends", default="flash,cudnn,efficient,math")
    ap.add_argument("--pass", dest="passes", default=None, help="fwd, bwd, fwd+bwd (comma-separated list)")
    ap.add_argument("--min-samples", type=int, default=10)
    ap.add_argument("--max-samples", type=int, default=100)
    ap.add_argument("--max-seconds", type=float, default=1.0)
    ap.add_argument("--target-noise", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--devices", default=None, help="device numbers (0,1) or all: one worker process each")
    # A worker of --devices: point numbers on stdin, rows as JSON lines on stdout.
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.backends = parse_list(args.backends, BACKENDS, "--backends", "back end")
    if args.devices is not None:
        args.devices = parse_devices(args.devices)
    try:
        with open(args.config) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(f"{args.config}: cannot read the config ({e})")
    if not isinstance(cfg, dict):
        raise UsageError(f"{args.config}: the config is not a JSON object")
    args.passes = passes_of(args.passes, cfg, args.config)
    return args, cfg


def main():
    try:
        args, cfg = parse_args()
        if args.devices is not None:
            return run_on_devices(args, cfg)
    except UsageError as e:
        print(f"torch_peers.py: {e}", file=sys.stderr)
        return 2
    worker = args.worker is not None
    log = sys.stderr if worker else sys.stdout  # a worker's stdout carries its rows

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    flush = torch.empty(2 * props.L2_cache_size, dtype=torch.uint8, device=dev)
    # clock_rate (kHz) where this torch exposes it; else the H200's 1980 MHz.
    clock_khz = getattr(props, "clock_rate", 1980000)
    # The SM clock before and after each row's samples, as fa-bench records it, judged
    # against the device's maximum (read once) by scripts/sm_clock.py. -1 without NVML.
    pci = None
    if all(hasattr(props, a) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id")):
        pci = f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
    clock = SmClock(pci)
    max_clock = clock.max_mhz()
    print(f"torch {torch.__version__} cudnn {torch.backends.cudnn.version()} {props.name}", flush=True, file=log)
    uuid = getattr(props, "uuid", None)
    device_cells = (dict(device_index=args.worker, device_name=props.name,
                         device_uuid=f"GPU-{uuid}" if uuid is not None else "") if worker else {})
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "f16": torch.float16}
    backward = any(p != "fwd" for p in args.passes)

    rows = []
    all_points = list(points(cfg))
    for index, pt in (dealt_points(all_points) if worker else enumerate(all_points)):
        b, h, hkv, nq, nk, d = (pt[k] for k in ("batch", "heads", "heads_kv", "seqlen_q", "seqlen_k", "head_dim"))
        gen = torch.Generator(device=dev).manual_seed(args.seed + nq * 7 + d)
        try:
            q = torch.randn(b, nq, h, d, device=dev, dtype=dt[pt["dtype"]], generator=gen).transpose(1, 2)
            k = torch.randn(b, nk, hkv, d, device=dev, dtype=dt[pt["dtype"]], generator=gen).transpose(1, 2)
            v = torch.randn(b, nk, hkv, d, device=dev, dtype=dt[pt["dtype"]], generator=gen).transpose(1, 2)
            dout = (torch.randn(b, nq, h, d, device=dev, dtype=dt[pt["dtype"]], generator=gen).transpose(1, 2)
                    if backward else None)
        except torch.OutOfMemoryError:
            if worker:
                print(json.dumps({"done": index}), flush=True)
            continue
        # float64 reference on sampled rows; causal is bottom-right aligned (row i sees
        # keys j <= i + nk - nq), the same convention as ours. dQ's too when a backward runs:
        # dQ = (P * (dO V^T - rowsum(dO * O))) K / sqrt(d).
        rows_idx = torch.linspace(0, nq - 1, min(nq, 64), device=dev).round().long().unique()
        qs, ks, vs = q[:, :, rows_idx].double(), k.double(), v.double()
        if hkv != h:
            ks, vs = ks.repeat_interleave(h // hkv, 1), vs.repeat_interleave(h // hkv, 1)
        s = qs @ ks.transpose(-1, -2) / math.sqrt(d)
        if pt["causal"]:
            keys = torch.arange(nk, device=dev)
            s = s.masked_fill(keys[None, :] > (rows_idx[:, None] + nk - nq), float("-inf"))
        p_ref = torch.nan_to_num(torch.softmax(s, -1))
        ref = p_ref @ vs
        dq_ref = None
        if backward:
            gs = dout[:, :, rows_idx].double()
            ds = p_ref * (gs @ vs.transpose(-1, -2) - (gs * ref).sum(-1, keepdim=True))
            dq_ref = ds @ ks / math.sqrt(d)
            del gs, ds
        del qs, ks, vs, s, p_ref
        for name in args.backends:
            # torch's is_causal is top-left aligned; pass an explicit bottom-right mask
            # only where the two differ (nq != nk), which some back ends refuse.
            kw = {"is_causal": pt["causal"]} if nq == nk or not pt["causal"] else {
                "attn_mask": torch.ones(nq, nk, dtype=torch.bool, device=dev).tril(nk - nq)}
            if hkv != h:
                kw["enable_gqa"] = True
            for pass_ in args.passes:
                row = dict.fromkeys(COLUMNS, "")
                row.update(kernel=f"torch.{name}", family=FAMILY[name], backend="cuda", batch=b, heads=h,
                           heads_kv=hkv, seqlen_q=nq, seqlen_k=nk, head_dim=d,
                           causal="true" if pt["causal"] else "false", dtype=pt["dtype"],
                           softmax_scale=1.0 / math.sqrt(d), seed=args.seed)
                row["pass"] = pass_
                note = ""
                try:
                    with sdpa_kernel(backends[name]):
                        run, first = make_runs(torch, F, pass_, q, k, v, dout, kw)
                        torch.cuda.synchronize()
                        base = torch.cuda.memory_allocated()
                        torch.cuda.reset_peak_memory_stats()
                        out, grads, new = first()
                        torch.cuda.synchronize()
                        kept = sum(t.numel() * t.element_size() for t in new)
                        peak = torch.cuda.max_memory_allocated() - base - kept
                        err = (out[:, :, rows_idx].double() - ref).abs()
                        nonfinite = int((~torch.isfinite(out[:, :, rows_idx])).sum())
                        for g in grads:
                            nonfinite += int((~torch.isfinite(g)).sum())
                        if grads:
                            dq_err = (grads[0][:, :, rows_idx].double() - dq_ref).abs().max().item()
                            note = f" (dq max abs err {dq_err:.3g})"
                        row.update(o_max_abs=err.max().item(), nonfinite=nonfinite,
                                   rows_checked=len(rows_idx), sampled="true" if len(rows_idx) < nq else "false",
                                   peak_extra_bytes=max(int(peak), 0))
                        del out, grads, new
                        summ, clock_before = time_samples(torch, run, flush, clock, clock_khz, HOLD_US[pass_], args)
                        del run, first  # the backward's saved tensors go with them
                    clock_after = clock.mhz()
                    row.update(summ, status="ok",
                               timing_method=("cuda-events, L2 flushed (torch), launch hidden behind a "
                                              f"{HOLD_US[pass_]} us stream hold"),
                               tflops=attention_flops(b, h, nq, nk, d, pt["causal"], pass_)
                               / (summ["median_ms"] * 1e-3) / 1e12,
                               # A clock NVML could not read is an empty cell, as fa-bench writes it.
                               clock_before_mhz=clock_before if clock_before > 0 else "",
                               clock_after_mhz=clock_after if clock_after > 0 else "",
                               reason=throttle_reason(clock_before, clock_after, max_clock))
                except torch.OutOfMemoryError as e:
                    row.update(status="oom", reason=str(e).splitlines()[0][:200])
                    torch.cuda.empty_cache()
                except RuntimeError as e:
                    msg = str(e).replace("\n", " ")[:200]
                    row.update(status="unsupported" if "No available kernel" in msg else "error", reason=msg)
                if worker:
                    row.update(device_cells)
                    print(json.dumps({"point": index, "row": row}), flush=True)
                else:
                    rows.append(row)
                    write_rows(args.out, rows)  # after every row: a cut-off run keeps what finished
                tf = f"{row['tflops']:.1f} TFLOP/s" if row["status"] == "ok" else row["status"]
                label = "" if pass_ == "fwd" else f" {pass_}"
                print(f"{'' if not worker else f'device {args.worker}: '}torch.{name:<9} b{b} h{h}/{hkv} q{nq} "
                      f"k{nk} d{d} {pt['dtype']}{' causal' if pt['causal'] else ''}{label}: {tf}{note}",
                      flush=True, file=log)
        del q, k, v, dout, ref, dq_ref
        torch.cuda.empty_cache()
        if worker:
            print(json.dumps({"done": index}), flush=True)
    if worker:
        return 0
    write_rows(args.out, rows)
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


def make_runs(torch, F, pass_, q, k, v, dout, kw):
    """(run, first): run() is what a sample times; first() runs the pass once, untimed,
    and returns (O, grads, new): O for validation, the gradients (none for fwd), and
    the tensors it allocated (what peak memory does not count as extra)."""
    attend = lambda q_, k_, v_: F.scaled_dot_product_attention(q_, k_, v_, **kw)
    if pass_ == "fwd":
        def first():
            out = attend(q, k, v)
            return out, [], [out]
        return (lambda: attend(q, k, v)), first
    # Leaves with q, k, v's BSHD strides, so the gradients are what fa-bench's kernels compute.
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
    if pass_ == "bwd":
        out = attend(qg, kg, vg)  # the one forward, outside the timed region
        run = lambda: torch.autograd.grad(out, (qg, kg, vg), dout, retain_graph=True)

        def first():
            grads = list(run())
            return out.detach(), grads, grads
        return run, first

    def both():
        o = attend(qg, kg, vg)
        return o, torch.autograd.grad(o, (qg, kg, vg), dout)

    def first():
        o, grads = both()
        return o.detach(), list(grads), [o, *grads]
    return both, first


def time_samples(torch, run, flush, clock, clock_khz, hold_us, args):
    """3 warm-up calls, then samples until the noise rule stops; (summary, clock before)."""
    hold_cycles = int(clock_khz * 1e-3 * hold_us)
    for _ in range(3):
        run()
    samples, t_start = [], time.monotonic()
    clock_before = clock.mhz()
    while True:
        flush.fill_(len(samples) & 0xFF)
        # Hold the stream so Python's dispatch of run() happens while the GPU is busy,
        # not between the events (fa-bench does the same; without it short points
        # read up to 30 % slow).
        torch.cuda._sleep(hold_cycles)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        run()
        e1.record()
        e1.synchronize()
        samples.append(e0.elapsed_time(e1))
        n = len(samples)
        if n >= args.max_samples or (n >= args.min_samples and (
                summarize(samples)["noise"] < args.target_noise
                or time.monotonic() - t_start > args.max_seconds)):
            break
    return summarize(samples), clock_before


def dealt_points(all_points):
    """A worker's points: their numbers, one a line on stdin, until stdin closes."""
    for line in sys.stdin:
        index = int(line)
        yield index, all_points[index]


def visible_devices(devices):
    """--devices as CUDA_VISIBLE_DEVICES values: the numbers count within the caller's
    CUDA_VISIBLE_DEVICES when it is set, as CUDA (and fa-bench) count them."""
    outer = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        count = len(outer)
    else:
        import torch  # only to count the devices
        count = torch.cuda.device_count()
    if devices == "all":
        devices = list(range(count))
    for d in devices:
        if d >= count:
            raise UsageError(f"--devices: there is no CUDA device {d}; this process sees {count}")
    if not devices:
        raise UsageError("--devices all: this process sees no CUDA device")
    return [(d, outer[d] if outer else str(d)) for d in devices]


def run_on_devices(args, cfg):
    """One worker process per device; points dealt in config order to whichever is free;
    the CSV rewritten in config order as points finish (docstring: Devices)."""
    devices = visible_devices(args.devices)
    all_points = list(points(cfg))
    worker_argv = [sys.executable, os.path.abspath(__file__), args.config, "--out", os.devnull,
                   "--backends", ",".join(args.backends), "--pass", ",".join(args.passes),
                   "--min-samples", str(args.min_samples), "--max-samples", str(args.max_samples),
                   "--max-seconds", str(args.max_seconds), "--target-noise", str(args.target_noise),
                   "--seed", str(args.seed)]
    lock = threading.Lock()
    state = {"next": 0, "head": 0, "halted": False}
    held, finished, written = {}, set(), []
    columns = list(COLUMNS) + list(DEVICE_COLUMNS)

    def write(flush=False):  # under the lock
        while state["head"] < len(all_points) and state["head"] in finished:
            written.extend(held.pop(state["head"], []))
            state["head"] += 1
        if flush:  # rows behind a point that never finished
            for i in sorted(held):
                written.extend(held.pop(i))
        write_rows(args.out, written, columns)

    def take():
        with lock:
            if state["halted"] or state["next"] >= len(all_points):
                return None
            state["next"] += 1
            return state["next"] - 1

    def work(index, visible):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=visible)
        child = subprocess.Popen(worker_argv + ["--worker", str(index)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=env)
        try:
            while (point := take()) is not None:
                child.stdin.write(f"{point}\n")
                child.stdin.flush()
                rows = []
                for line in child.stdout:
                    msg = json.loads(line)
                    if "row" in msg:
                        rows.append(msg["row"])
                    elif msg.get("done") == point:
                        break
                else:  # the worker ended inside the point
                    code = child.wait()
                    if code == -signal.SIGINT:  # Ctrl-C: the point is unfinished, not failed
                        return
                    pt = all_points[point]
                    for name in args.backends:
                        for pass_ in args.passes:
                            row = dict.fromkeys(columns, "")
                            row.update({k: pt[k] for k in ("batch", "heads", "heads_kv", "seqlen_q", "seqlen_k",
                                                            "head_dim", "dtype")})
                            row.update(kernel=f"torch.{name}", family=FAMILY[name], backend="cuda", status="error",
                                       causal="true" if pt["causal"] else "false",
                                       softmax_scale=1.0 / math.sqrt(pt["head_dim"]), seed=args.seed,
                                       device_index=index, reason=f"the worker on device {index} ended (exit {code})")
                            row["pass"] = pass_
                            rows.append(row)
                    with lock:
                        held[point] = rows
                        finished.add(point)
                        write()
                    return
                with lock:
                    held[point] = rows
                    finished.add(point)
                    write()
        finally:
            child.stdin.close()
            child.wait()

    with lock:
        write_rows(args.out, written, columns)  # the file exists from the start, like fa-bench's
    threads = [threading.Thread(target=work, args=d) for d in devices]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except KeyboardInterrupt:  # the workers got the signal too; keep what finished
        with lock:
            state["halted"] = True
            write(flush=True)
        print(f"interrupted: {len(written)} rows in {args.out}", file=sys.stderr)
        return 130
    with lock:
        write(flush=True)
    print(f"wrote {len(written)} rows to {args.out} from {len(devices)} devices")
    return 0


def write_rows(path, rows, columns=COLUMNS):
    """Replace `path` atomically (temp file + rename) with every row so far."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
