"""Expert kernels for LinearAlgebra/solve_symmetric_ldl: Gaussian elimination with partial pivoting on [A | B].

The task asks for the solution of the symmetric (or Hermitian) indefinite system, which is unique, and
accepts any accurate method; partial-pivoting elimination is backward stable here and needs no
symmetric pivot bookkeeping. A complex Hermitian system (complex64) is solved through its real
embedding: entry a = x + iy becomes the block [[x, -y], [y, x]] and each complex unknown and
right-hand side an adjacent (re, im) pair, a real system of size 2n (built by a Triton kernel).
Elimination: per column a one-program kernel picks and swaps in the pivot row (flagging an exactly
zero pivot) and a tiled 2-D kernel eliminates the trailing block, right-hand sides included; then one
tiled launch per row back-substitutes. fp32 throughout. Unblocked: O(n^3) memory traffic, 3n launches.
"""

import torch
import triton
import triton.language as tl

EMBED_BLOCK = 1024
PIVOT_BLOCK = 256
TILE_M, TILE_N = 64, 64


@triton.jit(do_not_specialize=["k"])  # k == 1 would otherwise become a constexpr without .to()
def _pivot_kernel(w_ptr, flag_ptr, n, ld, k, PIVOT: tl.constexpr, BLOCK: tl.constexpr):
    best = k.to(tl.int64)
    best_val = tl.abs(tl.load(w_ptr + k * ld + k))
    if PIVOT:
        for start in range(k + 1, n, BLOCK):
            rows = start + tl.arange(0, BLOCK).to(tl.int64)
            rmask = rows < n
            v = tl.where(rmask, tl.abs(tl.load(w_ptr + rows * ld + k, mask=rmask, other=0.0)), -1.0)
            blk_max = tl.max(v, axis=0)
            blk_arg = tl.argmax(v, axis=0).to(tl.int64) + start
            if blk_max > best_val:
                best_val = blk_max
                best = blk_arg
        if best != k:
            for start in range(k, ld, BLOCK):
                cols = start + tl.arange(0, BLOCK).to(tl.int64)
                m = cols < ld
                row_k = tl.load(w_ptr + k * ld + cols, mask=m)
                row_p = tl.load(w_ptr + best * ld + cols, mask=m)
                tl.store(w_ptr + k * ld + cols, row_p, mask=m)
                tl.store(w_ptr + best * ld + cols, row_k, mask=m)
    if best_val == 0.0:
        tl.store(flag_ptr, 1)


@triton.jit
def _eliminate_kernel(w_ptr, n, ld, k, TILE_M: tl.constexpr, TILE_N: tl.constexpr):
    rows = k + 1 + tl.program_id(0).to(tl.int64) * TILE_M + tl.arange(0, TILE_M)
    cols = k + 1 + tl.program_id(1).to(tl.int64) * TILE_N + tl.arange(0, TILE_N)
    rmask = rows < n
    cmask = cols < ld
    pivot = tl.load(w_ptr + k * ld + k)
    safe = tl.where(pivot == 0.0, 1.0, pivot)
    mult = tl.load(w_ptr + rows * ld + k, mask=rmask, other=0.0) / safe
    mult = tl.where(pivot == 0.0, 0.0, mult)
    urow = tl.load(w_ptr + k * ld + cols, mask=cmask, other=0.0)
    ptrs = w_ptr + rows[:, None] * ld + cols[None, :]
    m2 = rmask[:, None] & cmask[None, :]
    w = tl.load(ptrs, mask=m2, other=0.0)
    tl.store(ptrs, w - mult[:, None] * urow[None, :], mask=m2)


@triton.jit
def _back_substitute_kernel(w_ptr, x_ptr, n, ld, nrhs, i, TILE_M: tl.constexpr, TILE_N: tl.constexpr):
    # x[i, :] = rhs[i, :] / U[i, i]; then rhs[r, :] -= U[r, i] * x[i, :] for the rows r < i
    c = tl.program_id(1).to(tl.int64) * TILE_N + tl.arange(0, TILE_N)
    cmask = c < nrhs
    xi = tl.load(w_ptr + i * ld + n + c, mask=cmask, other=0.0) / tl.load(w_ptr + i * ld + i)
    if tl.program_id(0) == 0:
        tl.store(x_ptr + i * nrhs + c, xi, mask=cmask)
    rows = tl.program_id(0).to(tl.int64) * TILE_M + tl.arange(0, TILE_M)
    rmask = rows < i
    u = tl.load(w_ptr + rows * ld + i, mask=rmask, other=0.0)
    ptrs = w_ptr + rows[:, None] * ld + n + c[None, :]
    m2 = rmask[:, None] & cmask[None, :]
    rhs = tl.load(ptrs, mask=m2, other=0.0)
    tl.store(ptrs, rhs - u[:, None] * xi[None, :], mask=m2)


def _lu_solve(a: torch.Tensor, b2: torch.Tensor, pivot: bool = True) -> torch.Tensor:
    """X with a @ X = b2 for square fp32 a (n, n) and b2 (n, m); RuntimeError on an exactly zero pivot."""
    n, m = a.shape[0], b2.shape[1]
    ld = n + m
    w = torch.empty((n, ld), dtype=torch.float32, device=a.device)  # [A | B], eliminated in place
    w[:, :n].copy_(a)
    w[:, n:].copy_(b2)
    x = torch.empty((n, m), dtype=torch.float32, device=a.device)
    flag = torch.zeros((1,), dtype=torch.int32, device=a.device)
    for k in range(n):
        _pivot_kernel[(1,)](w, flag, n, ld, k, PIVOT=bool(pivot), BLOCK=PIVOT_BLOCK)
        if k + 1 < n:
            grid = (triton.cdiv(n - k - 1, TILE_M), triton.cdiv(ld - k - 1, TILE_N))
            _eliminate_kernel[grid](w, n, ld, k, TILE_M=TILE_M, TILE_N=TILE_N)
    if int(flag.item()):
        raise RuntimeError("the matrix is singular (an exactly zero pivot)")
    for i in range(n - 1, -1, -1):
        grid = (max(triton.cdiv(i, TILE_M), 1), triton.cdiv(m, TILE_N))
        _back_substitute_kernel[grid](w, x, n, ld, m, i, TILE_M=TILE_M, TILE_N=TILE_N)
    return x


@triton.jit
def _embed_kernel(a_ptr, m_ptr, n, BLOCK: tl.constexpr):
    """M[2i + s, 2j + t] from a_ij = x + iy (stored as (re, im) pairs): [[x, -y], [y, x]]."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    n2 = 2 * n
    mask = offs < n2 * n2
    r, c = offs // n2, offs % n2
    src = ((r // 2) * n + c // 2) * 2
    x = tl.load(a_ptr + src, mask=mask, other=0.0)
    y = tl.load(a_ptr + src + 1, mask=mask, other=0.0)
    v = tl.where((r % 2) == (c % 2), x, tl.where((r % 2) == 1, y, -y))
    tl.store(m_ptr + offs, v, mask=mask)


def solve_symmetric_ldl(A: torch.Tensor, b: torch.Tensor, hermitian: bool = False, out=None) -> torch.Tensor:
    if A.dim() != 2 or A.shape[0] != A.shape[1] or b.dim() not in (1, 2) or b.shape[0] != A.shape[0]:
        raise RuntimeError(f"solve_symmetric_ldl: expected A (n, n) and b (n,) or (n, k), got {tuple(A.shape)} "
                           f"and {tuple(b.shape)}")  # fmt: skip
    n = A.shape[0]
    cplx = bool(hermitian) and A.is_complex()
    rhs = b.reshape(n, -1)
    if cplx:
        a_ri = torch.view_as_real(A.to(torch.complex64).resolve_conj()).contiguous()
        a = torch.empty((2 * n, 2 * n), dtype=torch.float32, device=A.device)
        if n:
            _embed_kernel[(triton.cdiv(4 * n * n, EMBED_BLOCK),)](a_ri, a, n, BLOCK=EMBED_BLOCK)
        b_ri = torch.view_as_real(rhs.to(torch.complex64).resolve_conj())  # (n, k, 2)
        rhs = b_ri.permute(0, 2, 1).reshape(2 * n, -1)  # rows (re b_i, im b_i)
    else:
        a = A.to(torch.float32)
        rhs = rhs.to(torch.float32)
    x = _lu_solve(a, rhs) if a.shape[0] and rhs.shape[1] else torch.zeros_like(rhs)
    if cplx:
        x = torch.view_as_complex(x.reshape(n, 2, -1).permute(0, 2, 1).contiguous())
    x = x.reshape(b.shape)
    return out.copy_(x) if out is not None else x
