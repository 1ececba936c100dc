#!/usr/bin/env python3
"""A lane-level NumPy emulation of kernels/fa1/fa1_bwd.cuh (bf16), checked against
float64 gradients, for changes to its layouts before they cost a GPU run:

    python3 scripts/dev/fa1_bwd_emulate.py HD BM BN WARPS STAGES  B H HKV SQ SK CAUSAL
    e.g. python3 scripts/dev/fa1_bwd_emulate.py 128 64 128 8 2  1 4 2 130 130 1

It transliterates the kernel phase by phase (warps in turn between barriers) on an
emulated shared memory: ldmatrix (plain and .trans) and mma.m16n8k16 as the PTX ISA
defines their fragments, the XOR swizzle and its address steps, pack/unpack, the
transposed mask, the exp2 of P, D_i, the dQ adds and the dK/dV stores, the GQA and
causal loops. It checks index logic only: not races, barriers, cp.async groups, the
deterministic turns or timing, and only as far as it still mirrors the kernel (it
was written against the kernel of the commit that added it; update both together).
Prints max abs and relative L2 error per gradient; exit 1 if one is not finite or
its relative L2 error exceeds 2e-2 (bf16 rounding gives ~3e-3). Needs numpy."""
import itertools
import sys

import numpy as np

def f2bf(x):  # float32 -> bf16 bits (RNE)
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return (((b + 0x7fff + ((b >> 16) & 1)) >> 16) & 0xffff).astype(np.uint32)
def bf2f(bits): return (np.asarray(bits, np.uint32) << 16).view(np.float32)
def rnd(x): return bf2f(f2bf(x))
def pack2(lo, hi): return (f2bf(lo) | (f2bf(hi) << 16)).astype(np.uint32)
def unpack2(u): u = np.asarray(u, np.uint32); return bf2f(u & 0xffff), bf2f(u >> 16)

LANES = np.arange(32); G = LANES >> 2; T = LANES & 3

class Smem:
    def __init__(s, n): s.b = np.zeros(n, np.uint8)
    def u32(s, addr): return s.b[addr[:, None] + np.arange(4)].copy().view(np.uint32).reshape(-1)
    def u16(s, addr): return s.b[addr[:, None] + np.arange(2)].copy().view(np.uint16).reshape(-1).astype(np.uint32)
    def st32(s, addr, v):
        v = np.asarray(v, np.uint32).view(np.uint8).reshape(-1, 4)
        s.b[addr[:, None] + np.arange(4)] = v
    def f32(s, addr): return s.u32(addr).view(np.float32)
    def stf(s, addr, v): s.st32(np.asarray(addr), np.asarray(v, np.float32).view(np.uint32))

def swizzle(cols, row, col):
    chunk = col >> 3
    return row * cols + (((chunk ^ (row & 7)) << 3) | (col & 7))
def swizzle_base(tile, row, cols, chunk): return tile + row * cols * 2 + ((chunk ^ (row & 7)) << 4)
def swizzle_step(base, k): return (base ^ ((k * 32) & 0x60)) + ((k * 32) & ~0x7f)
def swizzle_chunks(base, n): return (base ^ ((n & 7) << 4)) + ((n >> 3) << 7)
def q_lane_base(hd, t, r0): return swizzle_base(t, r0 + (LANES & 7) + ((LANES >> 3) & 1) * 8, hd, LANES >> 4)
def k_lane_base(hd, t): return swizzle_base(t, (LANES & 7) + (LANES >> 4) * 8, hd, (LANES >> 3) & 1)
def v_lane_base(hd, t): return swizzle_base(t, (LANES & 7) + ((LANES >> 3) & 1) * 8, hd, LANES >> 4)
at_lane_base = k_lane_base

def ldsm(sm, addr):
    out = []
    for m in range(4):
        rows = addr[8 * m + (LANES >> 2)]
        out.append(sm.u32(rows + 4 * (LANES & 3)))
    return out
def ldsm_t(sm, addr):
    out = []
    for m in range(4):
        lo = sm.u16(addr[8 * m + 2 * (LANES & 3)] + 2 * (LANES >> 2))
        hi = sm.u16(addr[8 * m + 2 * (LANES & 3) + 1] + 2 * (LANES >> 2))
        out.append((lo | (hi << 16)).astype(np.uint32))
    return out

def mma(c, a, b0, b1):
    A = np.zeros((16, 16)); B = np.zeros((16, 8)); C = np.zeros((16, 8))
    for reg, (ro, ko) in enumerate([(0, 0), (8, 0), (0, 8), (8, 8)]):
        lo, hi = unpack2(a[reg]); A[G + ro, 2 * T + ko] = lo; A[G + ro, 2 * T + ko + 1] = hi
    for reg, ko in enumerate([0, 8]):
        lo, hi = unpack2([b0, b1][reg]); B[2 * T + ko, G] = lo; B[2 * T + ko + 1, G] = hi
    C[G, 2 * T] = c[0]; C[G, 2 * T + 1] = c[1]; C[G + 8, 2 * T] = c[2]; C[G + 8, 2 * T + 1] = c[3]
    C = C + A @ B
    c[0] = C[G, 2 * T].astype(np.float32); c[1] = C[G, 2 * T + 1].astype(np.float32)
    c[2] = C[G + 8, 2 * T].astype(np.float32); c[3] = C[G + 8, 2 * T + 1].astype(np.float32)

def zeros(m, n): return [[[np.zeros(32, np.float32) for _ in range(4)] for _ in range(n)] for _ in range(m)]

def warp_qk(sm, hd, acc, qb, kb):
    M, N = len(acc), len(acc[0]); rb = hd * 2
    for kk in range(hd // 16):
        a = [ldsm(sm, swizzle_step(qb, kk) + mt * 16 * rb) for mt in range(M)]
        for np_ in range(N // 2):
            b = ldsm(sm, swizzle_step(kb, kk) + np_ * 16 * rb)
            for mt in range(M):
                mma(acc[mt][2 * np_], a[mt], b[0], b[1]); mma(acc[mt][2 * np_ + 1], a[mt], b[2], b[3])
def pack_a(acc):
    return [[[pack2(acc[mt][2 * kk][0], acc[mt][2 * kk][1]), pack2(acc[mt][2 * kk][2], acc[mt][2 * kk][3]),
              pack2(acc[mt][2 * kk + 1][0], acc[mt][2 * kk + 1][1]), pack2(acc[mt][2 * kk + 1][2], acc[mt][2 * kk + 1][3])]
             for kk in range(len(acc[0]) // 2)] for mt in range(len(acc))]
def warp_ab(sm, hd, acc, a, bb):
    rb = hd * 2
    for kk in range(len(a[0])):
        for dp in range(hd // 16):
            b = ldsm_t(sm, swizzle_step(bb, dp) + kk * 16 * rb)
            for mt in range(len(a)):
                mma(acc[mt][2 * dp], a[mt][kk], b[0], b[1]); mma(acc[mt][2 * dp + 1], a[mt][kk], b[2], b[3])
def warp_pv_smem(sm, keys, hd, acc, pb, vb, dp0):
    prb, vrb = keys * 2, hd * 2
    for kk in range(keys // 16):
        a = [ldsm(sm, swizzle_step(pb, kk) + mt * 16 * prb) for mt in range(len(acc))]
        for dp in range(len(acc[0]) // 2):
            b = ldsm_t(sm, swizzle_step(vb, dp0 + dp) + kk * 16 * vrb)
            for mt in range(len(acc)):
                mma(acc[mt][2 * dp], a[mt], b[0], b[1]); mma(acc[mt][2 * dp + 1], a[mt], b[2], b[3])
def warp_at_b(sm, keys, acols, bcols, acc, ab, bb):
    arb, brb = acols * 2, bcols * 2
    for kk in range(keys // 16):
        a = [ldsm_t(sm, swizzle_step(ab, mt) + kk * 16 * arb) for mt in range(len(acc))]
        for dp in range(len(acc[0]) // 2):
            b = ldsm_t(sm, swizzle_step(bb, dp) + kk * 16 * brb)
            for mt in range(len(acc)):
                mma(acc[mt][2 * dp], a[mt], b[0], b[1]); mma(acc[mt][2 * dp + 1], a[mt], b[2], b[3])
def store_a(sm, cols, tile, a, row0, col0):
    base = swizzle_base(tile, row0 + G, cols, col0 >> 3) + 4 * T
    for mt in range(len(a)):
        for kk in range(len(a[0])):
            for r in range(4):
                addr = swizzle_chunks(base, 2 * kk + (r >> 1)) + (mt * 16 + (r & 1) * 8) * cols * 2
                sm.st32(addr, a[mt][kk][r])

def key_end(sq, sk, causal, row):
    if not causal: return sk
    e = row + sk - sq + 1
    return max(0, min(e, sk))

def run(HD, BM, BN, W, ST, B, H, HKV, SQ, SK, causal, seed=0, deterministic_order=False):
    rng = np.random.default_rng(seed)
    q = rnd(rng.standard_normal((B, SQ, H, HD)).astype(np.float32))
    k = rnd(rng.standard_normal((B, SK, HKV, HD)).astype(np.float32))
    v = rnd(rng.standard_normal((B, SK, HKV, HD)).astype(np.float32))
    do = rnd(rng.standard_normal((B, SQ, H, HD)).astype(np.float32))
    scale = 1 / np.sqrt(HD); grp = H // HKV
    # float64 forward (O rounded to bf16, LSE float32) and reference gradients
    O = np.zeros((B, SQ, H, HD)); LSE = np.full((B, H, SQ), -np.inf)
    dQ = np.zeros_like(O); dK = np.zeros((B, SK, HKV, HD)); dV = np.zeros_like(dK)
    for b_, h in itertools.product(range(B), range(H)):
        hk = h // grp
        S = scale * q[b_, :, h].astype(np.float64) @ k[b_, :, hk].astype(np.float64).T
        mask = np.array([[j < key_end(SQ, SK, causal, i) for j in range(SK)] for i in range(SQ)])
        S = np.where(mask, S, -np.inf)
        m = S.max(1, keepdims=True); m = np.where(np.isfinite(m), m, 0)
        e = np.exp(S - m); l = e.sum(1, keepdims=True)
        P = np.where(l > 0, e / np.where(l > 0, l, 1), 0)
        O[b_, :, h] = P @ v[b_, :, hk]
        LSE[b_, h] = np.where(l[:, 0] > 0, m[:, 0] + np.log(np.where(l[:, 0] > 0, l[:, 0], 1)), -np.inf)
        dOh = do[b_, :, h].astype(np.float64)
        dP = dOh @ v[b_, :, hk].T; Dd = (dOh * P.dot(v[b_, :, hk])).sum(1, keepdims=True)
        dS = P * (dP - Dd)
        dQ[b_, :, h] = scale * dS @ k[b_, :, hk]; dK[b_, :, hk] += scale * dS.T @ q[b_, :, h]; dV[b_, :, hk] += P.T @ dOh
    o = rnd(O.astype(np.float32)); lse = LSE.astype(np.float32)

    # traits
    kWarpsN = min(W, BN // 16); kWarpsD = W // kWarpsN; kKTiles = BN // (16 * kWarpsN)
    kQCols = BM // kWarpsD; kQTiles = kQCols // 8; kDCols = HD // kWarpsD; kDTiles = kDCols // 8
    PInRegs = kWarpsD == 1
    kQWarpsM = min(W, BM // 32); kQWarpsD = W // kQWarpsM; kQMTiles = BM // (16 * kQWarpsM); kQDTiles = HD // (8 * kQWarpsD)
    kQPasses = kQMTiles * kQDTiles // 8 if kQMTiles * kQDTiles > 8 else 1
    kThreads = W * 32; kKV = BN * HD; kQE = BM * HD; kSc = BN * BM
    kStage = 3 * kQE * 2 + BM * 4
    sK = 0; sV = kKV * 2; sdS = sV + kKV * 2; sP = sdS + kSc * 2
    stages = sP + (0 if PInRegs else kSc * 2); sD = stages + ST * kStage
    total = sD + BM * 4
    sQ = lambda s: stages + s * kStage; sdO = lambda s: sQ(s) + kQE * 2; sO = lambda s: sQ(s) + 2 * kQE * 2
    sLse = lambda s: sQ(s) + 3 * kQE * 2
    dq_acc = np.zeros((B, H, SQ, HD), np.float32)
    gdk = np.full((B, SK, HKV, HD), np.nan, np.float32); gdv = gdk.copy()
    m_blocks = (SQ + BM - 1) // BM; n_blocks = (SK + BN - 1) // BN
    bf = lambda a: f2bf(a).astype(np.uint16)

    def load_tile(sm, tile, rows, cols, src):  # src: [valid_rows, cols] float32 (bf16 values)
        cpr = cols // 8; step = kThreads // cpr
        for tid in range(kThreads):
            r0, col = tid // cpr, (tid % cpr) * 8
            for i in range(rows // step):
                r = r0 + i * step
                vals = bf(src[r, col:col + 8]) if r < src.shape[0] else np.zeros(8, np.uint16)
                off = tile + swizzle(cols, r, col) * 2
                sm.b[off:off + 16] = vals.view(np.uint8)

    for j, bkv in itertools.product(range(n_blocks), range(B * HKV)):
        sm = Smem(total)
        b_, hk = bkv // HKV, bkv % HKV
        i_begin = 0
        if causal:
            fr = j * BN - (SK - SQ); i_begin = 0 if fr <= 0 else fr // BM
        n_i = m_blocks - i_begin if i_begin < m_blocks else 0
        steps = grp * n_i
        tail = (j + 1) * BN > SK
        def load_stage(st, s):
            h, i = st
            rows = slice(i * BM, min((i + 1) * BM, SQ))
            load_tile(sm, sQ(s), BM, HD, q[b_, rows, h]); load_tile(sm, sdO(s), BM, HD, do[b_, rows, h])
            load_tile(sm, sO(s), BM, HD, o[b_, rows, h])
            for tid in range(BM):
                val = lse[b_, h, i * BM + tid] if i * BM + tid < SQ else 0.0
                sm.stf(np.array([sLse(s) + 4 * tid]), [val])
        def compute_d(st, s):
            kPerRow = kThreads // BM; kChunks = HD // 8 // kPerRow
            sums = {}
            for tid in range(kThreads):
                row, part = tid // kPerRow, tid % kPerRow
                xb = swizzle_base(sdO(s), row, HD, part); yb = swizzle_base(sO(s), row, HD, part)
                acc = 0.0
                for c in range(kChunks):
                    a = sm.u32(np.array([swizzle_chunks(xb, c * kPerRow)] * 1) + np.arange(0, 16, 4))
                    bb_ = sm.u32(np.array([swizzle_chunks(yb, c * kPerRow)]) + np.arange(0, 16, 4))
                    al, ah = unpack2(a); bl, bh = unpack2(bb_)
                    acc += float((al * bl + ah * bh).sum())
                sums[row] = sums.get(row, 0.0) + acc
            for r in range(BM):
                sm.stf(np.array([sD + 4 * r]), [sums[r]])
                l = sm.f32(np.array([sLse(s) + 4 * r]))[0]
                valid = st[1] * BM + r < SQ
                sm.stf(np.array([sLse(s) + 4 * r]), [l * 1.4426950408889634 if (valid and l != -np.inf) else np.inf])
        def advance(st):
            h, i = st; i += 1
            if i == m_blocks: i = i_begin; h += 1
            return (h, i)
        warps = range(W)
        role = lambda w: (w % kWarpsN, w // kWarpsN)
        acc_dv = {w: zeros(kKTiles, kDTiles) for w in warps}; acc_dk = {w: zeros(kKTiles, kDTiles) for w in warps}
        if steps > 0:
            ksrc = k[b_, j * BN:min((j + 1) * BN, SK), hk]; vsrc = v[b_, j * BN:min((j + 1) * BN, SK), hk]
            load_tile(sm, sK, BN, HD, ksrc); load_tile(sm, sV, BN, HD, vsrc)
            load_stage((hk * grp, i_begin), 0)
            if ST == 2: compute_d((hk * grp, i_begin), 0)
        st = (hk * grp, i_begin)
        for step in range(steps):
            s = (step & 1) if ST == 2 else 0
            has_next = step + 1 < steps
            if ST == 1:
                compute_d(st, 0)
                if has_next:  # load_o of the next step right after barrier A
                    h2, i2 = advance(st); rows2 = slice(i2 * BM, min((i2 + 1) * BM, SQ))
                    load_tile(sm, sO(0), BM, HD, o[b_, rows2, h2])
            if ST == 2 and has_next: load_stage(advance(st), s ^ 1)
            so = s * kStage
            p_keep = {}
            for w in warps:
                wn, wd = role(w); key0, q0, d0 = wn * 16 * kKTiles, wd * kQCols, wd * kDCols
                acc_s = zeros(kKTiles, kQTiles)
                warp_qk(sm, HD, acc_s, q_lane_base(HD, sK, key0), k_lane_base(HD, sQ(0)) + q0 * HD * 2 + so)
                q_first = st[1] * BM + q0
                if tail or (causal and key_end(SQ, SK, causal, q_first) < (j + 1) * BN):
                    for nt in range(kQTiles):
                        for e in range(2):
                            end = np.array([key_end(SQ, SK, causal, x) for x in q_first + nt * 8 + 2 * T + e])
                            for kt in range(kKTiles):
                                for half in range(2):
                                    key = j * BN + key0 + kt * 16 + G + half * 8
                                    acc_s[kt][nt][half * 2 + e] = np.where(key >= end, -np.inf, acc_s[kt][nt][half * 2 + e]).astype(np.float32)
                sl2 = scale * 1.4426950408889634
                for nt in range(kQTiles):
                    lx = sm.f32(sLse(s) + 4 * (q0 + nt * 8 + 2 * T)); ly = sm.f32(sLse(s) + 4 * (q0 + nt * 8 + 2 * T + 1))
                    for kt in range(kKTiles):
                        a = acc_s[kt][nt]
                        with np.errstate(invalid='ignore', over='ignore'):
                            for e, l in [(0, lx), (1, ly), (2, lx), (3, ly)]:
                                a[e] = np.exp2(np.float32(a[e]) * np.float32(sl2) - l).astype(np.float32)
                p_a = pack_a(acc_s)
                if PInRegs: warp_ab(sm, HD, acc_dv[w], p_a, v_lane_base(HD, sdO(0)) + so)
                else: store_a(sm, BM, sP, p_a, key0, q0)
                acc_ds = zeros(kKTiles, kQTiles)
                warp_qk(sm, HD, acc_ds, q_lane_base(HD, sV, key0), k_lane_base(HD, sdO(0)) + q0 * HD * 2 + so)
                for nt in range(kQTiles):
                    dx = sm.f32(sD + 4 * (q0 + nt * 8 + 2 * T)); dy = sm.f32(sD + 4 * (q0 + nt * 8 + 2 * T + 1))
                    for kt in range(kKTiles):
                        p0l, p0h = unpack2(p_a[kt][nt // 2][2 * (nt % 2)]); p1l, p1h = unpack2(p_a[kt][nt // 2][2 * (nt % 2) + 1])
                        a = acc_ds[kt][nt]
                        a[0] = p0l * (a[0] - dx); a[1] = p0h * (a[1] - dy); a[2] = p1l * (a[2] - dx); a[3] = p1h * (a[3] - dy)
                ds_a = pack_a(acc_ds)
                store_a(sm, BM, sdS, ds_a, key0, q0)
                if PInRegs: warp_ab(sm, HD, acc_dk[w], ds_a, v_lane_base(HD, sQ(0)) + so)
            if ST == 2 and has_next: compute_d(advance(st), s ^ 1)
            if not PInRegs:
                for w in warps:
                    wn, wd = role(w); key0, d0 = wn * 16 * kKTiles, wd * kDCols
                    warp_pv_smem(sm, BM, HD, acc_dv[w], q_lane_base(BM, sP, key0), swizzle_step(v_lane_base(HD, sdO(0)), d0 // 16) + so, 0)
                    warp_pv_smem(sm, BM, HD, acc_dk[w], q_lane_base(BM, sdS, key0), swizzle_step(v_lane_base(HD, sQ(0)), d0 // 16) + so, 0)
            if ST == 1 and has_next: load_stage(advance(st), 0)
            pt = kQDTiles // kQPasses
            for w in warps:
                qm, qd = w % kQWarpsM, w // kQWarpsM
                dq_a = swizzle_step(at_lane_base(BM, sdS), qm * kQMTiles); dq_b = swizzle_step(v_lane_base(HD, sK), qd * kQDTiles // 2)
                for ps in range(kQPasses):
                    acc = zeros(kQMTiles, pt)
                    warp_at_b(sm, BN, BM, HD, acc, dq_a, swizzle_step(dq_b, ps * pt // 2))
                    for mt in range(kQMTiles):
                        for half in range(2):
                            r = (qm * kQMTiles + mt) * 16 + G + half * 8
                            for dt in range(pt):
                                col = (qd * kQDTiles + ps * pt + dt) * 8 + 2 * T
                                for lane in range(32):
                                    if st[1] * BM + r[lane] < SQ:
                                        dq_acc[b_, st[0], st[1] * BM + r[lane], col[lane]] += acc[mt][dt][2 * half][lane]
                                        dq_acc[b_, st[0], st[1] * BM + r[lane], col[lane] + 1] += acc[mt][dt][2 * half + 1][lane]
            st = advance(st)
        for w in warps:
            wn, wd = role(w); key0, d0 = wn * 16 * kKTiles, wd * kDCols
            for kt in range(kKTiles):
                for half in range(2):
                    key = j * BN + key0 + kt * 16 + G + half * 8
                    for dt in range(kDTiles):
                        col = d0 + dt * 8 + 2 * T
                        for lane in range(32):
                            if key[lane] < SK:
                                gdk[b_, key[lane], hk, col[lane]:col[lane] + 2] = rnd(np.array([acc_dk[w][kt][dt][2 * half][lane], acc_dk[w][kt][dt][2 * half + 1][lane]], np.float32) * np.float32(scale))
                                gdv[b_, key[lane], hk, col[lane]:col[lane] + 2] = rnd(np.array([acc_dv[w][kt][dt][2 * half][lane], acc_dv[w][kt][dt][2 * half + 1][lane]], np.float32))
    gdq = rnd(dq_acc.transpose(0, 2, 1, 3) * np.float32(scale))
    ok = True
    for name, got, ref in [("dQ", gdq, dQ), ("dK", gdk, dK), ("dV", gdv, dV)]:
        err = np.abs(got - ref)
        rel = np.linalg.norm(np.nan_to_num(got - ref, nan=1e9)) / max(np.linalg.norm(ref), 1e-30)
        bad = not np.isfinite(got).all() or (np.linalg.norm(ref) > 0 and rel > 2e-2)
        ok &= not bad
        rel_s = f"{rel:.3e}" if np.linalg.norm(ref) > 0 else "n/a (reference is 0)"
        print(f"  {name}: max abs {np.nanmax(err):.3e} rel L2 {rel_s} max|ref| {np.abs(ref).max():.3f}"
              f" nan {np.isnan(got).sum()} {'BAD' if bad else 'ok'}")
    return ok

if __name__ == "__main__":
    if len(sys.argv) != 12:
        sys.exit(__doc__)
    cfg = [int(x) for x in sys.argv[1:6]]; shape = [int(x) for x in sys.argv[6:11]]; causal = sys.argv[11] == "1"
    print("tile", cfg, "shape B,H,HKV,SQ,SK", shape, "causal", causal)
    sys.exit(0 if run(*cfg, *shape, causal) else 1)
