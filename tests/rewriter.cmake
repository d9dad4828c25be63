# Owned by the rewriter work; filled in by it.
