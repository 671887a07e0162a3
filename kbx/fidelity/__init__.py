"""Fidelity against upstream: kbx's verdicts on the shared GEAK corpus beside the verdicts upstream
recorded on each line, per GPU, with every disagreement and its cause (`python -m kbx.fidelity`)."""
