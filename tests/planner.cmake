# Owned by the planner work; filled in by it.
