"""What ``lakeformat VERB --help`` says beyond the arguments: a description and an example for
every verb (a test checks that none is missing)."""
from __future__ import annotations

import argparse

# verb -> (description, examples)
VERBS: dict[str, tuple[str, tuple[str, ...]]] = {
    "databases": ("List the databases of the warehouse.", ("lakeformat databases --warehouse s3://lake/wh",)),
    "tables": ("List the tables of one database, or of all.", ("lakeformat tables demo",)),
    "show": ("A table's columns, partition and primary keys, options and latest snapshot.",
             ("lakeformat show demo.user_behavior",)),
    "read": ("Print rows of a table: the latest snapshot, or one chosen by id, tag or time. A filter "
             "prunes partitions and files before rows are read; the syntax is SQL's WHERE: = != < <= > >=, "
             "in (...), not in (...), is [not] null, and, or, not, parentheses; text in single quotes, "
             "`back-quoted` column names.",
             ("lakeformat read demo.user_behavior --filter \"dt = '2024-06-01' and behavior in ('buy', 'cart')\"",
              "lakeformat read demo.item_price --columns item_id,price --tag first-day --limit 0",
              "lakeformat read demo.user_behavior --as-of '2024-06-01 12:00:00' --json")),
    "snapshots": ("The table's retained snapshots: kind, time, records (Paimon's $snapshots).",
                  ("lakeformat snapshots demo.user_behavior",)),
    "schemas": ("Every schema version of the table ($schemas).", ("lakeformat schemas demo.user_behavior",)),
    "options": ("The table's options ($options).", ("lakeformat options demo.item_price",)),
    "files": ("The live data files of a snapshot: partition, bucket, level, records, size ($files).",
              ("lakeformat files demo.user_behavior --snapshot 3",)),
    "manifests": ("The manifests of a snapshot ($manifests).", ("lakeformat manifests demo.user_behavior",)),
    "partitions": ("Partitions with their records, files and size ($partitions).",
                   ("lakeformat partitions demo.user_behavior",)),
    "buckets": ("Buckets with their records, files and sorted runs: the number that says when to compact.",
                ("lakeformat buckets demo.item_price",)),
    "consumers": ("Consumers and the snapshot each reads next ($consumers).",
                  ("lakeformat consumers demo.user_behavior",)),
    "tags": ("Tags, their snapshots and retention ($tags).", ("lakeformat tags demo.user_behavior",)),
    "compact": ("Compact buckets into fewer files (a COMPACT snapshot): the picker's choice, or everything with "
                "--full. A progress bar on a terminal's stderr.",
                ("lakeformat compact demo.item_price", "lakeformat compact demo.user_behavior --partition "
                 "dt=2024-06-01 --full")),
    "expire-snapshots": ("Expire old snapshots in steps, with the files only they use; --dry-run says what "
                         "would go. A progress bar on a terminal's stderr.",
                         ("lakeformat expire-snapshots demo.user_behavior --older-than '7 d' --retain-min 10 "
                          "--dry-run",)),
    "expire-partitions": ("Drop partitions older than the expiration time (partition.expiration-time).",
                          ("lakeformat expire-partitions demo.user_behavior --expiration-time '30 d' --dry-run",)),
    "reset-consumer": ("Move a consumer to a snapshot, or delete it (without --next-snapshot).",
                       ("lakeformat reset-consumer demo.user_behavior dashboard --next-snapshot 12",)),
    "clear-consumers": ("Delete the consumers whose ids match a pattern.",
                        ("lakeformat clear-consumers demo.user_behavior --including 'job-.*' --dry-run",)),
    "create-tag": ("Tag a snapshot (default: the latest), optionally expiring the tag after a time.",
                   ("lakeformat create-tag demo.user_behavior end-of-june --time-retained '90 d'",)),
    "delete-tag": ("Delete a tag (its snapshot's files go with the next expiration if nothing else holds them).",
                   ("lakeformat delete-tag demo.user_behavior end-of-june",)),
    "branches": ("The table's branches other than main (read one as DATABASE.TABLE$branch_NAME).",
                 ("lakeformat branches demo.user_behavior",)),
    "create-branch": ("Create a branch at the latest snapshot, a snapshot (--from-snapshot) or a tag (--from-tag), "
                      "or with the schema only (--empty). It shares the table's files; write it as "
                      "DATABASE.TABLE$branch_NAME.",
                      ("lakeformat create-branch demo.user_behavior audit --from-tag first-day",)),
    "delete-branch": ("Delete a branch; files only it used go with the next orphan-file removal.",
                      ("lakeformat delete-branch demo.user_behavior audit",)),
    "fast-forward": ("Make main what a branch is: its snapshots, schemas and tags replace main's from the "
                     "branch's first snapshot on. Stop main's writers first.",
                     ("lakeformat fast-forward demo.user_behavior audit",)),
    "rollback": ("Make a snapshot or tag the latest again; newer snapshots, tags and their files go.",
                 ("lakeformat rollback demo.user_behavior --to first-day --dry-run",)),
    "remove-orphan-files": ("Delete files no snapshot, tag or staged commit reaches, older than --older-than. "
                            "A progress bar on a terminal's stderr.",
                            ("lakeformat remove-orphan-files demo.user_behavior --older-than '2 d' --dry-run",)),
    "iceberg-sync": ("Publish the Iceberg metadata (metadata.iceberg.storage) up to the latest snapshot.",
                     ("lakeformat iceberg-sync demo.user_behavior",)),
    "validate-config": ("Check a pipeline config (tables.yaml) as every job and DAG loads it, without running "
                        "anything.", ("lakeformat validate-config config/tables.yaml",)),
    "submit": ("Run a lakeformat Spark job with spark-submit, as the DAGs submit it: this venv's Python, "
               "lakeformat's jar, the pipeline config (--config, $LAKEFORMAT_CONFIG or ./config/tables.yaml) and "
               "the catalog settings in the job's environment. Everything after JOB goes to the job.",
               ("lakeformat submit ingest --table user_behavior --date 2024-06-07",
                "lakeformat submit --dry-run compact --table user_behavior --full")),
    "jar-path": ("Print the path of lakeformat's Spark jar, for spark-submit --jars.",
                 ('spark-submit --jars "$(lakeformat jar-path)" ...',)),
}

TOP_EXAMPLES = ("lakeformat --warehouse warehouse tables",
                "lakeformat read demo.user_behavior --filter \"dt = '2024-06-01'\" --limit 5",
                "lakeformat buckets demo.item_price --json")


def epilog(examples) -> str:
    return "example" + ("s" if len(examples) > 1 else "") + ":\n" + "\n".join(f"  {x}" for x in examples)


def describe(sub: argparse._SubParsersAction) -> None:
    """Give every verb of ``sub`` its description and examples (verbs without one keep theirs)."""
    for name, p in sub.choices.items():
        if name in VERBS:
            text, examples = VERBS[name]
            p.description = text
            p.epilog = epilog(examples)
            p.formatter_class = argparse.RawDescriptionHelpFormatter
