"""Reading a day of landing files into Spark (issue 16), side by side in one SparkSession on
``local[2]``, same files, each run into Spark's ``noop`` sink (every row parsed, nothing
collected):

  1. Spark's own JSON / CSV reader on a local folder (how local landing is read);
  2. the object-store path, ``ingest.remote_landing`` (driver lists, executors parse with
     pyarrow in ``mapInArrow``), on the files in an S3 bucket (moto's server on loopback);
  3. the same ``remote_landing`` on the local files (pyarrow parsing without the network);
  4. a PySpark Python Data Source doing what 2 does (one input partition per file), the
     alternative design; its options (file list, storage options with the credentials) are
     strings of the query plan.

    .venv/bin/python benchmarks/landing_read.py [--rows-per-day 1000000] [--runs 5]

Contenders alternate their order run by run; the table shows the median, every run, and the
ratio to Spark's own reader.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lakeformat.format import types as T  # noqa: E402
from lakeformat.pipeline import ingest, landing, landing_files  # noqa: E402
from lakeformat.pipeline.config import load_config  # noqa: E402
from lakeformat.spark.types import spark_arrow_schema, spark_type  # noqa: E402
from tests.servers import free_port, wait_until_serving  # noqa: E402

DAY = "2024-06-01"
CREDS = {"s3.access-key": "testing", "s3.secret-key": "testing", "s3.region": "us-east-1"}


def data_source_class():
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class LandingReader(DataSourceReader):
        def __init__(self, options, schema):
            self.files = json.loads(options["files"])
            self.fmt, self.store, self.schema = options["format"], json.loads(options["store"]), schema

        def partitions(self):
            return [InputPartition(f) for f in self.files]

        def read(self, partition):
            yield from landing_files.read_file(partition.value, self.fmt, spark_arrow_schema(self.schema),
                                               self.store).to_batches()

    class LandingSource(DataSource):
        @classmethod
        def name(cls):
            return "landing_bench"

        def reader(self, schema):
            return LandingReader(self.options, schema)

    return LandingSource


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows-per-day", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--table", default="user_behavior", help="user_behavior (JSON lines) or item_price (CSV)")
    a = ap.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructField, StructType

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    moto = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_serving(endpoint + "/moto-api/", moto, "moto server", 20)
        import boto3
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                     aws_secret_access_key="testing").create_bucket(Bucket="bench")
        store = {"s3.endpoint": endpoint, **CREDS}
        os.environ["LAKEFORMAT_CATALOG"] = json.dumps({"options": store})
        tmp = Path(tempfile.mkdtemp(prefix="landing-bench-"))
        local, remote = str(tmp / "landing"), "s3://bench/landing"
        cfg = load_config(str(ROOT / "config" / "tables.yaml"))
        spec = cfg.table(a.table)
        # several files per day, as an upstream system writes them: one per seed
        for seed in (3, 2, 1, 0):   # part-0 last: each seed writes part-0 first
            for root in (local, remote):
                d = landing.generate(spec, root, dt.date.fromisoformat(DAY), a.rows_per_day // 4, seed, False,
                                     store)
                for path in d if seed else ():   # part-0 of every other seed: renamed part-<seed>
                    landing_files.landing_io(root, store).move(path, path.replace("part-0", f"part-{seed}"))
        given = spec.path_columns(DAY)
        schema = StructType([StructField(n, spark_type(T.type_from_json(t)), True)
                             for n, t in spec.columns if n not in given])
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.log.level", "ERROR").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        spark.dataSource.register(data_source_class())
        folder_local, folder_remote = spec.landing_dir(local, DAY), spec.landing_dir(remote, DAY)
        local_files = landing_files.list_files(folder_local)
        remote_files = landing_files.list_files(folder_remote, store)

        def native():
            r = spark.read.schema(schema).option("mode", "FAILFAST")
            return (r.json(folder_local) if spec.landing_format == "jsonl"
                    else r.option("header", True).csv(folder_local))

        def source():
            return (spark.read.format("landing_bench").schema(schema).option("files", json.dumps(remote_files))
                    .option("format", spec.landing_format).option("store", json.dumps(store)).load())
        contenders = {
            "Spark's own reader, local folder": native,
            "remote_landing (mapInArrow + pyarrow), S3": lambda: ingest.remote_landing(
                spark, remote_files, spec.landing_format, schema, store),
            "remote_landing (mapInArrow + pyarrow), local files": lambda: ingest.remote_landing(
                spark, local_files, spec.landing_format, schema, store),
            "Python Data Source + pyarrow, S3": source,
        }
        counts = {n: f().count() for n, f in contenders.items()}   # warm-up: Python workers, JIT
        assert len(set(counts.values())) == 1, counts
        times: dict[str, list[float]] = {n: [] for n in contenders}
        names = list(contenders)
        for run in range(a.runs):
            for n in (names if run % 2 == 0 else names[::-1]):
                t0 = time.perf_counter()
                contenders[n]().write.format("noop").mode("overwrite").save()
                times[n].append(time.perf_counter() - t0)
        base = statistics.median(times[names[0]])
        print(f"{spec.name} ({spec.landing_format}), {counts[names[0]]:,} rows in {len(local_files)} files, "
              f"{a.runs} runs, load average {os.getloadavg()[0]:.1f}")
        for n in names:
            m = statistics.median(times[n])
            print(f"  {n:55s} median {m:6.2f} s  ({m / base:4.2f}x)  runs {' '.join(f'{t:.2f}' for t in times[n])}")
        spark.stop()
    finally:
        moto.terminate()
        moto.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
