"""Expert kernel for LinearAlgebra/solve_and_add_scaled_vector: blocked back substitution, one program per
right-hand-side column. Going up in blocks of BS rows, each block first subtracts A[block, solved] @ x_solved
(coalesced row tiles of A) and then solves its BS x BS diagonal block in registers (BS up to 32); a final pass adds
alpha * y (read through broadcast strides). fp64 inputs are computed in fp64, others in fp32."""

import torch
import triton
import triton.language as tl

BS_MAX = 32
BC = 128


@triton.jit
def _trsv_add_kernel(a_ptr, b_ptr, y_ptr, x_ptr, n, k, alpha, sa0, sb0, sb1, sy0, sy1,
                     F64: tl.constexpr, BS: tl.constexpr, BC: tl.constexpr):  # fmt: skip
    col = tl.program_id(0).to(tl.int64)
    cdt = tl.float64 if F64 else tl.float32
    nb = tl.cdiv(n, BS)
    lane = tl.arange(0, BS).to(tl.int64)
    for t in range(0, nb):
        r0 = (nb - 1 - t).to(tl.int64) * BS
        rows = r0 + lane
        rmask = rows < n
        rhs = tl.load(b_ptr + rows * sb0 + col * sb1, mask=rmask, other=0.0).to(cdt)
        for c0 in range(r0 + BS, n, BC):
            cols = c0 + tl.arange(0, BC).to(tl.int64)
            cmask = cols < n
            tile = tl.load(a_ptr + rows[:, None] * sa0 + cols[None, :], mask=rmask[:, None] & cmask[None, :],
                           other=0.0).to(cdt)  # fmt: skip
            xs = tl.load(x_ptr + cols * k + col, mask=cmask, other=0.0).to(cdt)
            rhs -= tl.sum(tile * xs[None, :], axis=1)
        dvals = tl.load(a_ptr + rows * sa0 + rows, mask=rmask, other=1.0).to(cdt)  # the block's diagonal
        xb = tl.zeros([BS], dtype=cdt)
        for s in tl.static_range(BS):
            j = BS - 1 - s
            sel = lane == j
            # column j of the diagonal block, rows above j (cached in L1 after the first touch)
            cmask = (lane < j) & (r0 + j + lane * 0 < n)
            dcol = tl.load(a_ptr + rows * sa0 + (r0 + j), mask=cmask, other=0.0).to(cdt)
            xj = tl.sum(tl.where(sel, rhs / dvals, 0.0), axis=0)
            xb = tl.where(sel, xj, xb)
            rhs -= dcol * xj
        tl.store(x_ptr + rows * k + col, xb.to(x_ptr.dtype.element_ty), mask=rmask)
        tl.debug_barrier()
    for r0 in range(0, n, BS):
        rows = r0 + lane
        rmask = rows < n
        xv = tl.load(x_ptr + rows * k + col, mask=rmask, other=0.0).to(cdt)
        yv = tl.load(y_ptr + rows * sy0 + col * sy1, mask=rmask, other=0.0).to(cdt)
        tl.store(x_ptr + rows * k + col, (xv + alpha * yv).to(x_ptr.dtype.element_ty), mask=rmask)


def solve_and_add_scaled_vector(A, b, y, alpha):
    n = A.shape[-1]
    a = A if A.stride(-1) == 1 else A.contiguous()
    k = b.shape[-1]
    yb = torch.broadcast_to(y, b.shape)
    x = torch.empty((n, k), dtype=A.dtype, device=A.device)
    bs = min(BS_MAX, triton.next_power_of_2(max(n, 2)))
    if n and k:
        _trsv_add_kernel[(k,)](a, b, yb, x, n, k, float(alpha), a.stride(0), b.stride(0), b.stride(1),
                               yb.stride(0), yb.stride(1), F64=A.dtype == torch.float64, BS=bs, BC=BC)  # fmt: skip
    return x
