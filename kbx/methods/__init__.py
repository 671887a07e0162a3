"""Generation methods and the one loop they all run through (loop.py)."""
