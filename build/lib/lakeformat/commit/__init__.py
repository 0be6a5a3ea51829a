"""The committer: commit messages into manifests, manifest lists and ``snapshot-N``, with conflict
checks, manifest merging, the catalog lock, and staged (write-audit-publish) commits."""
