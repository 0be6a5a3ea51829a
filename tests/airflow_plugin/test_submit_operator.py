"""One builder, two callers: the DAGs' LakeformatSparkSubmitOperator (through the Spark provider's
own hook) and ``lakeformat submit`` produce the same spark-submit command and environment for
the same inputs, and neither puts a credential on the command line."""
from __future__ import annotations

import json
from pathlib import Path

from lakeformat.cli import submit as cli_submit
from lakeformat.cli.main import build_parser
from lakeformat.pipeline.airflow.dags import LakeformatSparkSubmitOperator
from lakeformat.pipeline.config import load_config
from lakeformat.pipeline.submit import job_file
from lakeformat.table.settings import AWS_ENV, CATALOG_ENV, WAREHOUSE_ENV
from tests.project import CONFIG

SECRET = "OPERATORSECRET1"
OPTIONS = {"s3.endpoint": "http://minio:9000", "s3.access-key": "AK", "s3.secret-key": SECRET}


def test_the_operator_and_lakeformat_submit_build_the_same_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for k in (CATALOG_ENV, WAREHOUSE_ENV, "LAKEFORMAT_CONFIG", "PYSPARK_PYTHON", *AWS_ENV.values()):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_SUBMIT", json.dumps({
        "conn_type": "lakeformat", "host": "s3://lake/wh", "login": "AK", "password": SECRET,
        "extra": {"s3.endpoint": "http://minio:9000"}}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_SUBMIT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    conf = dict(load_config(str(CONFIG)).spark_conf)
    job_args = ["--table", "user_behavior", "--full"]

    op = LakeformatSparkSubmitOperator(
        task_id="compact", application=job_file("compact"), conn_id="spark_submit",
        lakeformat_conn_id="lakeformat_submit", application_args=["--config", str(CONFIG), *job_args, ""],
        conf=conf, name="lakeformat-compact", py_files=str(tmp_path / "lakeformat.zip"))
    op.prepare_submission()
    hook = op._get_hook()
    command = hook._build_spark_submit_command(op.application)   # what the provider runs

    # the same inputs on a shell: the connection's settings in the environment, the config given
    monkeypatch.setenv(CATALOG_ENV, json.dumps({"warehouse": "s3://lake/wh", "options": OPTIONS}))
    args = build_parser().parse_args(["submit", "--config", str(CONFIG), "--master", "local[2]",
                                      "--py-files", "lakeformat.zip", "compact", *job_args])
    sub, argv = cli_submit.plan(args)

    assert Path(command[0]).name == Path(argv[0]).name == "spark-submit"
    assert command[1:] == argv[1:]
    assert {"--jars", "--conf", "--py-files"} <= set(argv) and argv[-3:] == job_args
    assert hook._env == sub.env   # what the provider adds to spark-submit's environment
    assert json.loads(sub.env[CATALOG_ENV]) == {"warehouse": "s3://lake/wh", "options": dict(sorted(OPTIONS.items()))}
    assert not any(SECRET in a for a in command + argv)
