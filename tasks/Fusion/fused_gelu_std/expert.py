"""Expert kernels for Fusion/fused_gelu_std: GELU on the loads of a one-pass, numerically stable variance.

Every lane runs Welford's update over the elements it visits (count, mean, M2); lanes, and then programs,
are merged with the parallel-axis rule M2 = sum(M2_i + n_i * (mean_i - mean)^2). Global std: stage one
writes one (count, mean, M2) triple per program, one program merges them. Std along a dim: the dim is
moved last (contiguous rows) and each program reduces ROWS rows. Math in fp32.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024
ITERS = 32
# Globals read inside @triton.jit code must be tl.constexpr: the compiler rejects plain floats.
SQRT1_2 = tl.constexpr(0.7071067811865476)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)


@triton.jit
def _gelu(x, TANH: tl.constexpr):
    if TANH:
        z = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
        t = 2.0 / (1.0 + tl.exp(-2.0 * z)) - 1.0  # tanh(z) as 2 * sigmoid(2z) - 1
        g = 0.5 * x * (1.0 + t)
    else:
        g = 0.5 * x * (1.0 + tl.math.erf(x * SQRT1_2))
    return g


@triton.jit
def _welford_step(cnt, mean, m2, g, m):
    cnt_new = cnt + tl.where(m, 1.0, 0.0)
    delta = g - mean
    mean_new = tl.where(m, mean + delta / tl.maximum(cnt_new, 1.0), mean)
    m2_new = tl.where(m, m2 + delta * (g - mean_new), m2)
    return cnt_new, mean_new, m2_new


@triton.jit
def _merge(cnt, mean, m2, axis: tl.constexpr):
    """Merge (count, mean, M2) along `axis` with the parallel-axis rule."""
    n = tl.sum(cnt, axis=axis)
    mu = tl.sum(cnt * mean, axis=axis) / tl.maximum(n, 1.0)
    if axis == 0:
        d = mean - mu
    else:
        d = mean - mu[:, None]
    return n, mu, tl.sum(m2 + cnt * d * d, axis=axis)


@triton.jit
def _partial_kernel(x_ptr, part_ptr, n, TANH: tl.constexpr, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    cnt = tl.zeros([BLOCK], tl.float32)
    mean = tl.zeros([BLOCK], tl.float32)
    m2 = tl.zeros([BLOCK], tl.float32)
    base = pid * ITERS * BLOCK
    for it in range(ITERS):
        offs = base + it * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
        cnt, mean, m2 = _welford_step(cnt, mean, m2, _gelu(x, TANH), m)
    tn, tmu, tm2 = _merge(cnt, mean, m2, 0)
    tl.store(part_ptr + pid * 3, tn)
    tl.store(part_ptr + pid * 3 + 1, tmu)
    tl.store(part_ptr + pid * 3 + 2, tm2)


@triton.jit
def _finish_kernel(part_ptr, y_ptr, n_parts, correction, BLOCK: tl.constexpr):
    # first the overall mean, then the merged M2 (partials are few: one pass over them each)
    sn = tl.zeros([BLOCK], tl.float32)
    smu = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_parts, BLOCK):
        i = start + tl.arange(0, BLOCK)
        m = i < n_parts
        c = tl.load(part_ptr + i * 3, mask=m, other=0.0)
        sn += c
        smu += c * tl.load(part_ptr + i * 3 + 1, mask=m, other=0.0)
    total = tl.sum(sn, axis=0)
    mu = tl.sum(smu, axis=0) / total
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_parts, BLOCK):
        i = start + tl.arange(0, BLOCK)
        m = i < n_parts
        c = tl.load(part_ptr + i * 3, mask=m, other=0.0)
        d = tl.load(part_ptr + i * 3 + 1, mask=m, other=0.0) - mu
        acc += tl.load(part_ptr + i * 3 + 2, mask=m, other=0.0) + c * d * d
    var = tl.sum(acc, axis=0) / tl.maximum(total - correction, 0.0)
    tl.store(y_ptr, tl.sqrt(var).to(y_ptr.dtype.element_ty))


@triton.jit
def _rows_kernel(x_ptr, y_ptr, n_rows, red, correction, TANH: tl.constexpr, ROWS: tl.constexpr,
                 BLOCK: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cnt = tl.zeros([ROWS, BLOCK], tl.float32)
    mean = tl.zeros([ROWS, BLOCK], tl.float32)
    m2 = tl.zeros([ROWS, BLOCK], tl.float32)
    for start in range(0, red, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = (rows[:, None] < n_rows) & (cols[None, :] < red)
        x = tl.load(x_ptr + rows[:, None] * red + cols[None, :], mask=m, other=0.0).to(tl.float32)
        cnt, mean, m2 = _welford_step(cnt, mean, m2, _gelu(x, TANH), m)
    _, _, tm2 = _merge(cnt, mean, m2, 1)
    var = tm2 / tl.maximum(red - correction, 0.0)
    tl.store(y_ptr + rows, tl.sqrt(var).to(y_ptr.dtype.element_ty), mask=rows < n_rows)


def fused_gelu_std(input, dim=None, keepdim=False, correction=1, approximate="none", out=None) -> torch.Tensor:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    tanh = approximate == "tanh"
    if dim is None:
        x = input.contiguous()
        n = x.numel()
        iters = min(ITERS, max(1, triton.cdiv(n, BLOCK)))  # small inputs: fewer, shorter loops
        n_parts = max(1, triton.cdiv(n, BLOCK * iters))
        parts = torch.empty(n_parts * 3, dtype=torch.float32, device=x.device)
        y = torch.empty((), dtype=x.dtype, device=x.device)
        _partial_kernel[(n_parts,)](x, parts, n, TANH=tanh, BLOCK=BLOCK, ITERS=iters, num_warps=8)
        _finish_kernel[(1,)](parts, y, n_parts, float(correction), BLOCK=1024, num_warps=4)
        return y.reshape([1] * x.dim()) if keepdim else y
    d = dim % input.dim()
    xt = input.movedim(d, -1).contiguous()
    red = xt.shape[-1]
    lead = list(xt.shape[:-1])
    n_rows = xt.numel() // red if red else 0
    y = torch.empty(n_rows, dtype=input.dtype, device=input.device)
    rows_per_prog = 16
    block = min(256, triton.next_power_of_2(max(red, 1)))
    if n_rows:
        grid = (triton.cdiv(n_rows, rows_per_prog),)
        _rows_kernel[grid](xt, y, n_rows, red, float(correction), TANH=tanh, ROWS=rows_per_prog, BLOCK=block,
                           num_warps=8)  # fmt: skip
    y = y.reshape(lead)
    return y.unsqueeze(d) if keepdim else y
