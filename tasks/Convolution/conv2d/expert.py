"""Expert kernel for Convolution/conv2d: implicit GEMM over a channels-last copy of the input (kbx/experts/conv.py).

The input is copied once to NHWC and the weights to (Cout, kH, kW, Cin/groups), so that the
reduction index k = (kh, kw, ci) runs along contiguous memory in both operands. Per group, each
program computes a (BLOCK_M output positions) x (BLOCK_N output channels) tile: for every filter
tap (kh, kw) it gathers the shifted input rows once and streams channel blocks through tl.dot with
fp32 accumulation (TF32 on GPU, matching the task's matmul tolerance). Zero padding is a load mask.

Speed: on an H200 (2026-11-29, docs/BENCHMARKS.md, the full-suite run at 8988c43), 0.106 / 0.494 / 3.57 ms at i = 9
/ 10 / 11 against eager's 0.083 / 0.401 / 2.61 ms (cuDNN's TF32 convolution), 0.77x; 0.22x before the kernel
specialised its channel counts, which lets the NHWC loads vectorise (kbx/experts/conv.py).
"""

from kbx.experts.conv import conv2d

__all__ = ["conv2d"]
