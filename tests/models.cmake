# Owned by the models work; filled in by it.
