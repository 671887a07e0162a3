"""`python -m kbx.bench`: how fast, repeatable and cheap the evaluator is on this machine."""
