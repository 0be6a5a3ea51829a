"""What is on disk, as values: Paimon's types, schemas, options, BinaryRow, partitions, buckets,
snapshots, manifests and commit messages. Pure encodings and models: nothing here touches storage."""
