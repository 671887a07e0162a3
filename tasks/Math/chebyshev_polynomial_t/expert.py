"""Expert kernel for Math/chebyshev_polynomial_t: T_n(x) by the three-term recurrence, one elementwise pass.

The recurrence T_{k+1} = 2 x T_k - T_{k-1} runs in fp64 and is rounded once to fp32, so for |x| <= 1 it is
accurate well beyond torch's own fp32 result (which uses cos(n acos x) for n > 6). |x| = 1 gives exactly +-1,
as torch; n < 0 gives 0.
"""

import torch
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _cheb_kernel(x_ptr, y_ptr, numel, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float64)
    p = tl.full(x.shape, 1.0, tl.float64)  # T_0
    q = x  # T_1
    for _ in range(1, n):
        r = 2.0 * x * q - p
        p = q
        q = r
    y = q
    if n == 0:
        y = p
    # exact values at |x| = 1: 1, except -1 for x = -1 and odd n
    odd = (n % 2) == 1
    y = tl.where(tl.abs(x) == 1.0, tl.where((x < 0) & odd, -1.0, 1.0), y)
    if n < 0:
        y = tl.zeros_like(x)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def chebyshev_polynomial_t(input: torch.Tensor, n: int, out: torch.Tensor | None = None) -> torch.Tensor:
    x = input.contiguous()  # `out` is accepted and ignored by the task's contract
    y = torch.empty_like(x)
    numel = x.numel()
    if numel:
        _cheb_kernel[(triton.cdiv(numel, BLOCK),)](x, y, numel, int(n), BLOCK=BLOCK, num_warps=8)
    return y
