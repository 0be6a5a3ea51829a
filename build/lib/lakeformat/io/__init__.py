"""Storage and files: ``pyarrow.fs`` access, the stores of schemas, snapshots and manifests, and
data files read and written with their statistics."""
