"""A driver for the cluster test of the SQL catalog (submitted with spark-submit): the catalog
over the warehouse of ``$LAKEFORMAT_CATALOG`` (credentials from the environment, set on the
session at run time, never on the command line), then the catalog's statements in SQL: CREATE
TABLE, INSERT INTO, SELECT with a filter, a tag (CALL), INSERT OVERWRITE of a partition, ALTER
TABLE ADD COLUMN, compaction (CALL: a Spark job on the cluster), a system table, time travel,
DELETE FROM a primary-key table and snapshot expiration (CALL);
prints one JSON line of what the queries answered."""
from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

import lakeformat.spark as lfs
from lakeformat.spark.sql import catalog_confs
from lakeformat.table.settings import from_environment


def main(table: str) -> None:
    warehouse, options = from_environment()
    spark = SparkSession.builder.appName("lakeformat-sql-catalog").config("spark.log.level", "WARN").getOrCreate()
    for k, v in catalog_confs("lf", warehouse or "", **options).items():
        spark.conf.set(k, v)
    lfs.register(spark)
    spark.sql(f"CREATE TABLE lf.{table} (id BIGINT, k STRING, price DOUBLE, dt STRING) PARTITIONED BY (dt) "
              "TBLPROPERTIES ('bucket' = '2', 'bucket-key' = 'id')")
    spark.sql(f"INSERT INTO lf.{table} SELECT id, CAST(id % 7 AS STRING), id / 10.0, "
              "IF(id % 2 = 0, '2024-06-01', '2024-06-02') FROM range(0, 4000, 1, 4)")
    spark.sql(f"INSERT INTO lf.{table} VALUES (100000, 'z', 1.5, '2024-06-03')")
    filtered = spark.sql(f"SELECT id, k, price, dt FROM lf.{table} WHERE dt = '2024-06-01' AND k = '3' AND price > 50")
    rows = sorted(r.id for r in filtered.collect())
    total = spark.sql(f"SELECT count(*) AS n, sum(id) AS s FROM lf.{table}").collect()[0]
    tables = [r.tableName for r in spark.sql(f"SHOW TABLES IN lf.{table.split('.')[0]}").collect()]
    spark.sql(f"CALL lf.sys.create_tag(table => '{table}', tag => 'loaded', snapshot => 2)")
    spark.sql(f"INSERT OVERWRITE lf.{table} PARTITION (dt = '2024-06-03') VALUES (100001, 'y', 2.5)")
    spark.sql(f"ALTER TABLE lf.{table} ADD COLUMN note STRING")
    spark.sql(f"INSERT INTO lf.{table} VALUES (100002, 'x', 3.5, '2024-06-03', 'new')")
    # a second file in each bucket of 2024-06-01, for the compaction to rewrite
    spark.sql(f"INSERT INTO lf.{table} SELECT id + 200000, 'w', 0.5, '2024-06-01', CAST(NULL AS STRING) "
              "FROM range(0, 10)")
    spark.sql(f"CALL lf.sys.compact(table => '{table}')")
    kinds = [r.commit_kind for r in spark.sql(
        f"SELECT snapshot_id, commit_kind FROM lf.`{table.split('.')[0]}`.`{table.split('.')[1]}$snapshots` "
        "ORDER BY snapshot_id").collect()]
    as_of = spark.sql(f"SELECT count(*) AS n FROM lf.{table} VERSION AS OF 'loaded'").collect()[0].n
    final = spark.sql(f"SELECT count(*) AS n, sum(id) AS s, count(note) AS notes FROM lf.{table}").collect()[0]
    # a primary-key table beside it: DELETE by a predicate, then expiration
    users = f"lf.{table.split('.')[0]}.users"
    spark.sql(f"CREATE TABLE {users} (id BIGINT NOT NULL, name STRING) "
              "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '2')")
    spark.sql(f"INSERT INTO {users} SELECT id, CONCAT('u', id) FROM range(0, 100, 1, 2)")
    spark.sql(f"DELETE FROM {users} WHERE id < 10 OR id = 50")
    expired = spark.sql(f"CALL lf.sys.expire_snapshots(table => '{users[3:]}', retain_max => 1, "
                        "retain_min => 1)").collect()[0][0]
    users_left = spark.sql(f"SELECT count(*) AS n FROM {users}").collect()[0].n
    print(json.dumps({"filtered": rows, "count": total.n, "sum": total.s, "tables": tables, "kinds": kinds,
                      "as_of": as_of, "final": [final.n, final.s, final.notes], "expired": expired,
                      "users": users_left}))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
