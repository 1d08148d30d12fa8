"""Other projects' friction solvers, run beside ours for comparison and as oracles."""
