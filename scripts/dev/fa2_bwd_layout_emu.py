#!/usr/bin/env python3
"""Emulates the index math of one fa2_bwd_kernel CTA (kernels/fa2/fa2_bwd.cuh) in numpy.

Shared memory is a flat array of 16-bit slots addressed in bytes; ldmatrix (plain and
.trans), mma.m16n8k16 and the XOR swizzle follow their definitions in
kernels/common/mma_sm80.cuh, and the warp GEMMs, the S^T / P^T / dS^T stores, the
dK / dV epilogue and the dQ fragment order follow warp_mma.cuh, tile_store.cuh and
fa2_bwd_workspace.cuh line by line. Values stay float64 (no rounding), so any
difference from the dense reference is an index or layout error, not precision.

    scripts/dev/fa2_bwd_layout_emu.py            # every tile of kernels/fa2/instances.cmake
    scripts/dev/fa2_bwd_layout_emu.py 128:64:128:8   # head_dim:block_m:block_n:warps

Exit 0 when every tile matches (max abs error < 1e-9), 1 otherwise, 77 (skipped)
without numpy.
"""
import math
import re
import sys
from pathlib import Path

try:
    import numpy as np
except ImportError:
    print("fa2_bwd_layout_emu: skipped, this python3 has no numpy")
    sys.exit(77)

# ---------------------------------------------------------------- hardware model


def swizzle(cols, row, col):  # element offset, mma_sm80.cuh swizzle<Cols>
    assert cols % 64 == 0
    chunk = col >> 3
    return row * cols + (((chunk ^ (row & 7)) << 3) | (col & 7))


def swizzle_base(tile, row, cols, chunk):  # byte address
    return tile + row * cols * 2 + ((chunk ^ (row & 7)) << 4)


def swizzle_step(base, k):
    return (base ^ ((k * 32) & 0x60)) + ((k * 32) & ~0x7F)


class Smem:
    def __init__(self, nbytes):
        self.v = np.full(nbytes // 2, np.nan)

    def put_tile(self, tile, x):  # x [rows][cols] into a swizzled tile at byte `tile`
        rows, cols = x.shape
        for r in range(rows):
            for c in range(cols):
                self.v[tile // 2 + swizzle(cols, r, c)] = x[r, c]

    def ldmatrix_x4(self, addr, trans=False):
        """addr[lane]: byte address of row lane%8 of matrix lane//8. Returns r[lane][4][2]."""
        r = np.zeros((32, 4, 2))
        for i in range(4):
            m = np.array([[self.v[addr[8 * i + row] // 2 + c] for c in range(8)] for row in range(8)])
            if trans:
                m = m.T
            for lane in range(32):
                g, t = lane >> 2, lane & 3
                r[lane, i] = m[g, 2 * t:2 * t + 2]
        return r


def mma(c, a, b0, b1):
    """c[lane][4] += A B; a[lane][4][2], b0/b1[lane][2] as mma.m16n8k16 row.col lays them out."""
    A = np.zeros((16, 16))
    B = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        A[g, 2 * t:2 * t + 2] = a[lane, 0]
        A[g + 8, 2 * t:2 * t + 2] = a[lane, 1]
        A[g, 2 * t + 8:2 * t + 10] = a[lane, 2]
        A[g + 8, 2 * t + 8:2 * t + 10] = a[lane, 3]
        B[2 * t:2 * t + 2, g] = b0[lane]
        B[2 * t + 8:2 * t + 10, g] = b1[lane]
    C = A @ B
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        c[lane] += [C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1]]


LANES = range(32)


def q_lane_base(tile, row0, cols):
    return [swizzle_base(tile, row0 + (l & 7) + ((l >> 3) & 1) * 8, cols, l >> 4) for l in LANES]


def k_lane_base(tile, cols):
    return [swizzle_base(tile, (l & 7) + (l >> 4) * 8, cols, (l >> 3) & 1) for l in LANES]


def v_lane_base(tile, cols):
    return [swizzle_base(tile, (l & 7) + ((l >> 3) & 1) * 8, cols, l >> 4) for l in LANES]


def at(base, f):
    return [f(x) for x in base]


# ---------------------------------------------------------------- warp_mma.cuh


def mma_ntile_pair(acc, a, b, j):
    for mt in range(acc.shape[0]):
        mma(acc[mt, 2 * j], a[mt], b[:, 0], b[:, 1])
        mma(acc[mt, 2 * j + 1], a[mt], b[:, 2], b[:, 3])


def mma_step_b_rows(sm, acc, a, b_base, brow_bytes, kk, dp0):
    for dp in range(acc.shape[1] // 2):
        b = sm.ldmatrix_x4(at(b_base, lambda x: swizzle_step(x, dp0 + dp) + kk * 16 * brow_bytes), trans=True)
        mma_ntile_pair(acc, a, b, dp)


def warp_qk(sm, acc, q_base, k_base, head_dim):
    row_bytes = head_dim * 2
    mtiles, ntiles = acc.shape[0], acc.shape[1]
    for kk in range(head_dim // 16):
        a = np.stack([sm.ldmatrix_x4(at(q_base, lambda x: swizzle_step(x, kk) + mt * 16 * row_bytes))
                      for mt in range(mtiles)])
        for np_ in range(ntiles // 2):
            b = sm.ldmatrix_x4(at(k_base, lambda x: swizzle_step(x, kk) + np_ * 16 * row_bytes))
            mma_ntile_pair(acc, a, b, np_)


def warp_pv(sm, acc_o, acc_s, v_base, head_dim, dp0):
    mtiles, ntiles = acc_s.shape[0], acc_s.shape[1]
    for kk in range(ntiles // 2):
        a = np.zeros((mtiles, 32, 4, 2))
        for mt in range(mtiles):
            a[mt, :, 0] = acc_s[mt, 2 * kk, :, 0:2]
            a[mt, :, 1] = acc_s[mt, 2 * kk, :, 2:4]
            a[mt, :, 2] = acc_s[mt, 2 * kk + 1, :, 0:2]
            a[mt, :, 3] = acc_s[mt, 2 * kk + 1, :, 2:4]
        mma_step_b_rows(sm, acc_o, a, v_base, head_dim * 2, kk, dp0)


def warp_pv_smem(sm, acc_o, p_base, keys, v_base, head_dim, dp0):
    prow_bytes = keys * 2
    for kk in range(keys // 16):
        a = np.stack([sm.ldmatrix_x4(at(p_base, lambda x: swizzle_step(x, kk) + mt * 16 * prow_bytes))
                      for mt in range(acc_o.shape[0])])
        mma_step_b_rows(sm, acc_o, a, v_base, head_dim * 2, kk, dp0)


def warp_gemm_at_b(sm, acc, a_base, arow_elems, am0, b_base, brow_elems, ksteps, dp0):
    for kk in range(ksteps):
        a = np.stack([sm.ldmatrix_x4(at(a_base, lambda x: swizzle_step(x, am0 + mt) + kk * 16 * arow_elems * 2),
                                     trans=True) for mt in range(acc.shape[0])])
        mma_step_b_rows(sm, acc, a, b_base, brow_elems * 2, kk, dp0)


# ---------------------------------------------------------------- fa2_bwd.cuh


class Traits:
    def __init__(self, hd, bm, bn, warps, stages=2):
        self.hd, self.bm, self.bn, self.warps = hd, bm, bn, warps
        self.dsplit = hd // 128 if hd > 128 else 1
        self.dcols = hd // self.dsplit
        self.stage_bytes = 2 * bm * hd * 2 + 2 * bm * 4
        self.ds_elems = bn * bm
        smem_regs = 2 * bn * hd * 2 + stages * self.stage_bytes + self.ds_elems * 2
        self.p_in_smem = (self.dsplit == 1 and self.dcols >= 128 and bn == 16 * warps
                          and smem_regs + self.ds_elems * 2 <= 227 * 1024)
        self.warps_d = 2 if self.p_in_smem else 1
        self.key_groups = warps // self.warps_d
        self.key_tiles = bn // (16 * self.key_groups)
        self.warp_queries = bm // self.warps_d
        self.warp_dcols = self.dcols // self.warps_d
        self.dtiles = self.warp_dcols // 8
        self.sub_m = 64 if self.key_tiles == 1 and hd < 128 else 32
        self.sub_tiles = self.sub_m // 8
        # DqAccumTile
        self.dq_warps_m = bm // 32
        self.dq_warps_d = warps // self.dq_warps_m
        self.dq_warp_cols = self.dcols // self.dq_warps_d
        self.dq_dtiles = self.dq_warp_cols // 8
        assert bn == 16 * self.key_groups * self.key_tiles and self.warp_queries % self.sub_m == 0
        assert self.warp_dcols % 16 == 0 and self.dq_warp_cols % 16 == 0

    def frag_offset(self, part, warp, mt, dt, lane):
        return part * self.bm * self.dcols + (((warp * 2 + mt) * self.dq_dtiles + dt) * 32 + lane) * 4


def store_transposed(sm, tile, queries, acc, key0, query0):
    for mt in range(acc.shape[0]):
        for j in range(acc.shape[1]):
            for half in range(2):
                for lane in LANES:
                    off = swizzle(queries, key0 + mt * 16 + (lane >> 2) + half * 8, query0 + 8 * j + 2 * (lane & 3))
                    sm.v[tile // 2 + off:tile // 2 + off + 2] = acc[mt, j, lane, 2 * half:2 * half + 2]


def for_each_query(v, acc, f):  # v: the sub-step's per-query vector
    for j in range(acc.shape[1]):
        for lane in LANES:
            x = v[8 * j + 2 * (lane & 3):8 * j + 2 * (lane & 3) + 2]
            for mt in range(acc.shape[0]):
                for e in range(4):
                    acc[mt, j, lane, e] = f(acc[mt, j, lane, e], x[e & 1])


def run_cta(T, part, Q, K, V, dO, lse2, D, scale_log2, causal_first_query):
    """One CTA's K/V block over Q blocks; Q, dO [m_blocks*bm][hd], K, V [bn][hd].
    causal_first_query[key]: first query that sees the key (bottom-right causal), or None.
    Returns dK (unscaled), dV [bn][dcols of this part], dQ accumulator [m][hd]."""
    hd, bm, bn = T.hd, T.bm, T.bn
    sK, sV = 0, bn * hd * 2
    stage = 2 * bn * hd * 2  # one stage is enough: the pipeline does not move data
    sdS = stage + T.stage_bytes
    sPt = sdS + T.ds_elems * 2
    sm = Smem(sPt + T.ds_elems * 2)
    sm.put_tile(sK, K)
    sm.put_tile(sV, V)
    m_blocks = Q.shape[0] // bm
    dq_accum = np.zeros(m_blocks * bm * hd)
    acc_dk = {w: np.zeros((T.key_tiles, T.dtiles, 32, 4)) for w in range(T.warps)}
    acc_dv = {w: np.zeros((T.key_tiles, T.dtiles, 32, 4)) for w in range(T.warps)}
    for m in range(m_blocks):
        sm.put_tile(stage, Q[m * bm:(m + 1) * bm])
        sm.put_tile(stage + bm * hd * 2, dO[m * bm:(m + 1) * bm])
        s_lse, s_d = lse2[m * bm:(m + 1) * bm], D[m * bm:(m + 1) * bm]
        for w in range(T.warps):  # phase 1: S^T, P^T, dP^T, dS^T per warp
            key_w0 = (w if T.warps_d == 1 else w % T.key_groups) * 16 * T.key_tiles
            wd = 0 if T.warps_d == 1 else w // T.key_groups
            query_w0 = wd * T.warp_queries
            dp0 = (part * T.dcols + wd * T.warp_dcols) // 16
            k_a = q_lane_base(sK, key_w0, hd)
            v_a = q_lane_base(sV, key_w0, hd)
            q_b = k_lane_base(stage, hd)
            do_b = k_lane_base(stage + bm * hd * 2, hd)
            q_bt = v_lane_base(stage, hd)
            do_bt = v_lane_base(stage + bm * hd * 2, hd)
            for sub in range(T.warp_queries // T.sub_m):
                q0 = query_w0 + sub * T.sub_m
                so = q0 * hd * 2
                acc_s = np.zeros((T.key_tiles, T.sub_tiles, 32, 4))
                warp_qk(sm, acc_s, k_a, at(q_b, lambda x: x + so), hd)
                # mask: keys before their first query (causal) get -inf
                for mt in range(T.key_tiles):
                    for j in range(T.sub_tiles):
                        for lane in LANES:
                            for e in range(4):
                                key = key_w0 + mt * 16 + (lane >> 2) + (e >> 1) * 8
                                qry = m * bm + q0 + 8 * j + 2 * (lane & 3) + (e & 1)
                                if causal_first_query is not None and qry < causal_first_query[key]:
                                    acc_s[mt, j, lane, e] = -math.inf
                lv, dv = s_lse[q0:q0 + T.sub_m], s_d[q0:q0 + T.sub_m]
                for_each_query(lv, acc_s, lambda s, l: 2.0 ** (s * scale_log2 - l))
                acc_dp = np.zeros_like(acc_s)
                warp_qk(sm, acc_dp, v_a, at(do_b, lambda x: x + so), hd)
                if not T.p_in_smem:
                    warp_pv(sm, acc_dv[w], acc_s, at(do_bt, lambda x: x + so), hd, dp0)
                ds = acc_dp.copy()
                for j in range(T.sub_tiles):
                    for lane in LANES:
                        x = dv[8 * j + 2 * (lane & 3):8 * j + 2 * (lane & 3) + 2]
                        for mt in range(T.key_tiles):
                            for e in range(4):
                                ds[mt, j, lane, e] = acc_s[mt, j, lane, e] * (acc_dp[mt, j, lane, e] - x[e & 1])
                if T.p_in_smem:
                    store_transposed(sm, sPt, bm, acc_s, key_w0, q0)
                    store_transposed(sm, sdS, bm, ds, key_w0, q0)
                else:
                    warp_pv(sm, acc_dk[w], ds, at(q_bt, lambda x: x + so), hd, dp0)
                    store_transposed(sm, sdS, bm, ds, key_w0, q0)
        # __syncthreads()
        if T.p_in_smem:  # phase 2
            for w in range(T.warps):
                key_w0 = (w % T.key_groups) * 16 * T.key_tiles
                wd = w // T.key_groups
                dp0 = (part * T.dcols + wd * T.warp_dcols) // 16
                warp_pv_smem(sm, acc_dv[w], q_lane_base(sPt, key_w0, bm), bm,
                             v_lane_base(stage + bm * hd * 2, hd), hd, dp0)
                warp_pv_smem(sm, acc_dk[w], q_lane_base(sdS, key_w0, bm), bm, v_lane_base(stage, hd), hd, dp0)
        for w in range(T.warps):  # dQ_i += dS K_j, fragment-ordered reductions
            acc_dq = np.zeros((2, T.dq_dtiles, 32, 4))
            row0 = (w // T.dq_warps_d) * 32
            col0 = part * T.dcols + (w % T.dq_warps_d) * T.dq_warp_cols
            warp_gemm_at_b(sm, acc_dq, k_lane_base(sdS, bm), bm, row0 // 16, v_lane_base(sK, hd), hd,
                           bn // 16, col0 // 16)
            base = m * bm * hd
            for mt in range(2):
                for dt in range(T.dq_dtiles):
                    for lane in LANES:
                        off = base + T.frag_offset(part, w, mt, dt, lane)
                        dq_accum[off:off + 4] += acc_dq[mt, dt, lane]
    # epilogue: frags_to_smem into K's and V's tiles, then rows out
    out = []
    for acc in (acc_dk, acc_dv):
        tile = np.full(bn * T.dcols, np.nan)
        for w in range(T.warps):
            key_w0 = (w if T.warps_d == 1 else w % T.key_groups) * 16 * T.key_tiles
            wd = 0 if T.warps_d == 1 else w // T.key_groups
            for mt in range(T.key_tiles):
                for half in range(2):
                    for dt in range(T.dtiles):
                        for lane in LANES:
                            row = key_w0 + mt * 16 + (lane >> 2) + half * 8
                            col = wd * T.warp_dcols + dt * 8 + 2 * (lane & 3)
                            off = swizzle(T.dcols, row, col)
                            tile[off:off + 2] = acc[w][mt, dt, lane, 2 * half:2 * half + 2]
        out.append(np.array([[tile[swizzle(T.dcols, r, c)] for c in range(T.dcols)] for r in range(bn)]))
    # dQ read back as the conversion kernel does (frag_offset -> frags_to_smem order)
    dq = np.zeros((m_blocks * bm, hd))
    for m in range(m_blocks):
        for w in range(T.warps):
            row0 = (w // T.dq_warps_d) * 32
            col0 = part * T.dcols + (w % T.dq_warps_d) * T.dq_warp_cols
            for mt in range(2):
                for dt in range(T.dq_dtiles):
                    for lane in LANES:
                        v = dq_accum[m * bm * hd + T.frag_offset(part, w, mt, dt, lane):][:4]
                        r, c = row0 + mt * 16 + (lane >> 2), col0 + dt * 8 + 2 * (lane & 3)
                        dq[m * bm + r, c:c + 2] = v[0:2]
                        dq[m * bm + r + 8, c:c + 2] = v[2:4]
    return out[0], out[1], dq


def check(hd, bm, bn, warps, causal, seed=0):
    T = Traits(hd, bm, bn, warps)
    rng = np.random.default_rng(seed)
    m_blocks = 2
    sq = m_blocks * bm
    Q, dO = rng.standard_normal((sq, hd)), rng.standard_normal((sq, hd))
    K, V = rng.standard_normal((bn, hd)), rng.standard_normal((bn, hd))
    scale = 1 / math.sqrt(hd)
    S = Q @ K.T * scale
    # This CTA is the last key block of a causal problem with seqlen_q = sq, seqlen_k = bn:
    # query i sees key j <= i + bn - sq.
    first = np.array([j + sq - bn for j in range(bn)]) if causal else None
    if causal:
        S = np.where(np.arange(sq)[:, None] >= first[None, :], S, -np.inf)
    lse = np.log(np.exp(S).sum(1) + np.exp(rng.standard_normal(sq)))  # rows need not be normalised
    P = np.exp(S - lse[:, None])
    dP = dO @ V.T
    D = rng.standard_normal(sq)
    dS = P * (dP - D[:, None])
    ref_dv, ref_dk, ref_dq = P.T @ dO, dS.T @ Q, dS @ K
    err = 0.0
    for part in range(T.dsplit):
        cols = slice(part * T.dcols, (part + 1) * T.dcols)
        dk, dv, dq = run_cta(T, part, Q, K, V, dO, lse * math.log2(math.e), D, scale * math.log2(math.e), first)
        for got, ref in ((dk, ref_dk[:, cols]), (dv, ref_dv[:, cols]), (dq[:, cols], ref_dq[:, cols])):
            e = np.abs(got - ref)
            err = max(err, math.inf if np.isnan(e).any() else e.max())  # unwritten slots stay NaN
    layout = "P^T in smem, %d key groups x %d" % (T.key_groups, T.warps_d) if T.p_in_smem else \
        "P^T in registers, %d key tile(s) per warp" % T.key_tiles
    ok = err < 1e-9
    print("%s hd%d %dx%d.w%d %s (%s, sub-step %d): max abs error %.3g" %
          ("ok  " if ok else "FAIL", hd, bm, bn, warps, "causal" if causal else "full", layout, T.sub_m, err))
    return ok


def tiles_from_instances():
    text = (Path(__file__).resolve().parents[2] / "kernels/fa2/instances.cmake").read_text()
    bwd = text[text.index("fa_add_bwd_instances"):]
    return sorted({tuple(int(x) for x in m.groups()) for m in re.finditer(r"bf16:(\d+):(\d+):(\d+):(\d+):\d+", bwd)})


def main(argv):
    tiles = [tuple(int(x) for x in a.split(":")) for a in argv] or tiles_from_instances()
    ok = True
    for hd, bm, bn, warps in tiles:
        for causal in (False, True):
            ok &= check(hd, bm, bn, warps, causal)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
