"""spark-submit entry point of lakeformat/pipeline/jobs/ingest.py (its --help says what it does)."""
from lakeformat.pipeline.jobs import run
from lakeformat.pipeline.jobs.ingest import main

if __name__ == "__main__":
    run(main)
