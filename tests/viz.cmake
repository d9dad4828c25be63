# Owned by the viz work; filled in by it.
