"""Keeping tables healthy: compaction, snapshot and partition expiration, consumers, tags,
rollback and orphan files. Each is a pure plan over metadata and a thin executor."""
