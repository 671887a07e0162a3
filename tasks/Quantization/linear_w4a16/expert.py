"""Expert kernels for Quantization/linear_w4a16: int4 weight packing, then an fp16 tl.dot GEMM on nibbles.

_pack_kernel computes each weight row's scale (max |w| / 7) and its int4 values (IEEE division, round
half away from zero, clamp [-8, 7]) and packs two per byte: column 2j in the low nibble, 2j+1 in the
high one. _w4a16_kernel streams the packed weight, sign-extends the nibbles to fp16 (exact), and
accumulates x_even @ lo + x_odd @ hi in fp32 with tl.dot; the row scale and bias are applied in the
epilogue and the result rounded once to fp16.
"""

import torch
import triton
import triton.language as tl

PACK_BLOCK = 512  # at most this many packed bytes (1024 weights) per row per step of the quantize pass
BLOCK_N, BLOCK_KP = 128, 64  # output columns and packed bytes (128 weights along K) per GEMM step


@triton.jit
def _pack_kernel(w_ptr, packed_ptr, scale_ptr, N, K, KP, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < N
    base = w_ptr + rows[:, None] * K
    j = tl.arange(0, BLOCK)
    amax = tl.zeros((ROWS, BLOCK), dtype=tl.float32)
    for j0 in range(0, KP, BLOCK):
        jj = (j0 + j).to(tl.int64)[None, :]
        e = tl.load(base + 2 * jj, mask=rmask[:, None] & (2 * jj < K), other=0.0).to(tl.float32)
        o = tl.load(base + 2 * jj + 1, mask=rmask[:, None] & (2 * jj + 1 < K), other=0.0).to(tl.float32)
        amax = tl.maximum(amax, tl.maximum(tl.abs(e), tl.abs(o)))
    m = tl.max(amax, axis=1)
    s = tl.math.div_rn(m, tl.full(m.shape, 7.0, tl.float32))
    s = tl.where(m == 0.0, 1.0, s)
    tl.store(scale_ptr + rows, s, mask=rmask)
    s2 = tl.broadcast_to(s[:, None], (ROWS, BLOCK))
    for j0 in range(0, KP, BLOCK):
        jj = (j0 + j).to(tl.int64)[None, :]
        e = tl.load(base + 2 * jj, mask=rmask[:, None] & (2 * jj < K), other=0.0).to(tl.float32)
        o = tl.load(base + 2 * jj + 1, mask=rmask[:, None] & (2 * jj + 1 < K), other=0.0).to(tl.float32)
        ve = tl.math.div_rn(e, s2)  # IEEE division, as the contract
        vo = tl.math.div_rn(o, s2)
        ae = tl.floor(tl.abs(ve) + 0.5)
        ao = tl.floor(tl.abs(vo) + 0.5)
        qe = tl.minimum(tl.maximum(tl.where(ve < 0.0, -ae, ae), -8.0), 7.0).to(tl.int32)
        qo = tl.minimum(tl.maximum(tl.where(vo < 0.0, -ao, ao), -8.0), 7.0).to(tl.int32)
        byte = (qe & 0xF) | ((qo & 0xF) << 4)
        tl.store(packed_ptr + rows[:, None] * KP + jj, byte.to(tl.uint8), mask=rmask[:, None] & (jj < KP))


@triton.jit
def _w4a16_kernel(
    x_ptr, p_ptr, s_ptr, bias_ptr, out_ptr, M, N, K, KP, sxm, sxk,
    HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_KP: tl.constexpr,
):  # fmt: skip
    pid_n = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rj = tl.arange(0, BLOCK_KP)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for j0 in range(0, KP, BLOCK_KP):
        jj = (j0 + rj).to(tl.int64)
        ke, ko = 2 * jj, 2 * jj + 1
        xe = tl.load(x_ptr + rm[:, None] * sxm + ke[None, :] * sxk, mask=(rm[:, None] < M) & (ke[None, :] < K), other=0.0)
        xo = tl.load(x_ptr + rm[:, None] * sxm + ko[None, :] * sxk, mask=(rm[:, None] < M) & (ko[None, :] < K), other=0.0)
        # packed weight is (N, KP) row-major; read it as a (BLOCK_KP, BLOCK_N) tile of W^T
        pk = tl.load(p_ptr + rn[None, :] * KP + jj[:, None], mask=(jj[:, None] < KP) & (rn[None, :] < N), other=0)
        p32 = pk.to(tl.int32)
        lo = ((p32 << 28) >> 28).to(tl.float16)  # sign-extended low nibble: exact in fp16
        hi = ((p32 << 24) >> 28).to(tl.float16)
        acc = tl.dot(xe.to(tl.float16), lo, acc)
        acc = tl.dot(xo.to(tl.float16), hi, acc)
    s = tl.load(s_ptr + rn, mask=rn < N, other=0.0)
    out = acc * s[None, :]
    if HAS_BIAS:
        out = out + tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], out.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def linear_w4a16(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    x = input.half()
    w = weight.half().contiguous()
    M, K = x.shape
    N, K2 = w.shape
    if K != K2:
        raise RuntimeError(f"linear_w4a16: input has {K} features, weight expects {K2}")
    KP = (K + 1) // 2
    packed = torch.empty((N, KP), dtype=torch.uint8, device=w.device)
    scale = torch.empty((N,), dtype=torch.float32, device=w.device)
    out = torch.empty((M, N), dtype=torch.float16, device=x.device)
    if N:
        block = min(PACK_BLOCK, triton.next_power_of_2(KP))
        rows = 16 if N * KP <= 2**20 else 4  # few programs for small layers, many for large ones
        _pack_kernel[(triton.cdiv(N, rows),)](w, packed, scale, N, K, KP, ROWS=rows, BLOCK=block, num_warps=8)
    if M and N:
        b = bias.half().contiguous() if bias is not None else scale  # dummy pointer when no bias
        block_m = 16 if M <= 16 else 64
        grid = (triton.cdiv(N, BLOCK_N), triton.cdiv(M, block_m))
        _w4a16_kernel[grid](
            x, packed, scale, b, out, M, N, K, KP, x.stride(0), x.stride(1),
            HAS_BIAS=bias is not None, BLOCK_M=block_m, BLOCK_N=BLOCK_N, BLOCK_KP=BLOCK_KP, num_warps=4,
        )  # fmt: skip
    return out
