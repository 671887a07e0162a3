"""The evaluator, in the driver process: attempts, the worker and judge processes, GPU scheduling, pools."""
