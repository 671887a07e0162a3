"""Triton kernels that several tasks' expert solutions share (tasks/<Category>/<stem>/expert.py)."""
