"""Primary-key tables: Paimon's LSM merge tree (levels, compaction, merge engines)."""
