"""kbx: run and track experiments on KernelBench-X (LLM-written Triton kernels)."""

__version__ = "0.1.0"
