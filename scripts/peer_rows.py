"""Rows of a standalone peer timer's CSV (tests/gpu/standalone/cudnn_fp8_check --csv:
impl, dtype, o_type, causal, hdim, seqlen, batch, heads, ms, tflops, check) in the
sweep's columns, so summarize.py and plot.py read them beside fa-bench rows; and the
rule both apply when a sweep timed the same kernel family: the sweep's row wins.

cuDNN's FP8 forward is a sweep kernel (`cudnn.e4m3`) and, timed in its own process, the
cross-check `cudnn_fp8_check`: where a sweep row of the family exists at a point, the
standalone row of that point is dropped, so a point never shows two cuDNN numbers and
the sweep's (validated and timed like fa3's, in the same run) is the one kept.
"""

STANDALONE_COLUMNS = {"impl", "hdim", "seqlen", "tflops"}


def is_standalone(fieldnames):
    return STANDALONE_COLUMNS <= set(fieldnames or [])


def standalone_rows(rd):
    """The timer's rows as sweep rows; the kernel is named impl.dtype ("cudnn_fp8.e4m3"),
    the family is impl's first word, and `source` says where the row came from."""
    for r in rd:
        yield {"kernel": f"{r['impl']}.{r['dtype']}", "family": r["impl"].split("_")[0], "backend": "cuda",
               "pass": "fwd", "batch": r["batch"], "heads": r["heads"], "seqlen_q": r["seqlen"],
               "seqlen_k": r["seqlen"], "head_dim": r["hdim"],
               "causal": "true" if r["causal"] in ("1", "true") else "false", "dtype": r["dtype"],
               "status": "ok" if r.get("check", "").startswith("PASS") else "failed", "median_ms": r["ms"],
               "tflops": r["tflops"], "source": "standalone"}


def _point(r):
    return (r.get("family"), r.get("dtype"), r.get("pass") or "fwd", str(r.get("head_dim")), str(r.get("causal")),
            str(r.get("seqlen_q")), str(r.get("batch", "")), str(r.get("heads", "")))


def prefer_sweep_rows(rows):
    """rows without the standalone ones whose (family, dtype, pass, head_dim, causal,
    seqlen, batch, heads) a sweep row also has."""
    swept = {_point(r) for r in rows if r.get("source") != "standalone" and r.get("backend") == "cuda"}
    return [r for r in rows if r.get("source") != "standalone" or _point(r) not in swept]
