"""How a verdict is reached: output comparison and the timing policy, shared by the judge and the driver."""
