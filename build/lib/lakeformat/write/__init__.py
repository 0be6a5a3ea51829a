"""Table writes: input checked against the schema, rows routed to (partition, bucket), files
written per bucket. Writers hand ``CommitMessage``s to a committer and never touch ``snapshot/``."""
