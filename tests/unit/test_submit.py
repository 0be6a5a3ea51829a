"""The one spark-submit builder (lakeformat.pipeline.submit) and ``lakeformat submit`` /
``lakeformat jar-path`` without running Spark: what goes into the arguments, what into the
environment, and that no credential ever reaches a command line."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lakeformat.cli.main import main
from lakeformat.errors import LakeformatError
from lakeformat.pipeline import submit
from lakeformat.table.settings import CATALOG_ENV, CatalogSettings, resolve
from tests.project import CONFIG, ROOT

SECRET = "SUBMITSECRET1"
SETTINGS = CatalogSettings("s3://lake/wh", {"s3.endpoint": "http://minio:9000", "s3.access-key": "AK",
                                            "s3.secret-key": SECRET,
                                            "lock.uri": "postgresql://lake:PGSECRET1@db/locks"})


def test_a_submission_carries_the_settings_in_the_environment_only():
    sub = submit.build("ingest", ["--table", "user_behavior", "", "--date", "2024-06-07"], SETTINGS,
                       conf={"spark.sql.shuffle.partitions": "8"}, environ={})
    argv = sub.argv("local[2]")
    assert argv == ["spark-submit", "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=8",
                    "--jars", submit.jar_path(), "--name", "lakeformat-ingest", submit.job_file("ingest"),
                    "--table", "user_behavior", "--date", "2024-06-07"]   # the empty argument dropped
    assert not any(SECRET in a or "PGSECRET1" in a for a in argv) and SECRET not in repr(sub)
    assert sub.env["PYSPARK_PYTHON"] == sys.executable   # the venv's Python, unless the environment names one
    assert resolve(env=sub.env) == SETTINGS              # the job finds exactly these settings again
    assert submit.build("ingest", [], SETTINGS, environ={"PYSPARK_PYTHON": "python"}).env["PYSPARK_PYTHON"] == "python"


def test_a_local_warehouse_is_made_absolute_for_the_job(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sub = submit.build("compact", [], CatalogSettings("wh"), environ={})
    assert json.loads(sub.env[CATALOG_ENV]) == {"warehouse": str(tmp_path / "wh"), "options": {}}


@pytest.mark.parametrize("arg", [f"s3.secret-key={SECRET}", "postgresql://u:PGSECRET2@db/x", "--password=hunter22"])
def test_a_credential_among_the_job_arguments_is_refused_without_repeating_it(arg):
    with pytest.raises(LakeformatError, match="a job argument holds a credential") as e:
        submit.build("compact", ["--table", "t", arg], SETTINGS, environ={})
    assert SECRET not in str(e.value) and "PGSECRET2" not in str(e.value) and "hunter22" not in str(e.value)


def test_unknown_jobs_are_named_with_the_known_ones():
    assert {"ingest", "compact", "expire_snapshots", "remove_orphans"} <= set(submit.jobs())
    with pytest.raises(LakeformatError, match=r"no lakeformat job 'ingestt'; the jobs are: clean_consumers, compact"):
        submit.job_file("ingestt")
    with pytest.raises(LakeformatError, match="no lakeformat job '__init__'"):
        submit.job_file("__init__")


def test_the_config_of_an_ad_hoc_submit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert submit.find_config(environ={}) is None
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tables.yaml").write_text("tables: {}\n")
    assert submit.find_config(environ={}) == str(tmp_path / "config" / "tables.yaml")
    assert submit.find_config(environ={"LAKEFORMAT_CONFIG": "/etc/t.yaml"}) == "/etc/t.yaml"
    assert (submit.find_config("other.yaml", environ={"LAKEFORMAT_CONFIG": "/etc/t.yaml"})
            == str(tmp_path / "other.yaml"))


def _cli(*args, env=None):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LAKEFORMAT_", "AWS_"))}
    return subprocess.run([sys.executable, "-c", "import sys; from lakeformat.cli.main import main; sys.exit(main())",
                           *args], cwd=ROOT, env={**base, "PYTHONPATH": str(ROOT), **(env or {})},
                          capture_output=True, text=True, timeout=120)


def test_dry_run_prints_a_line_to_copy_without_the_credentials():
    env = {CATALOG_ENV: json.dumps({"warehouse": "s3://lake/wh", "options": {"s3.secret-key": SECRET}})}
    p = _cli("submit", "--dry-run", "--master", "local[2]", "ingest", "--table", "user_behavior", "--date",
             "2024-06-07", env=env)
    assert p.returncode == 0, p.stderr
    assert SECRET not in p.stdout + p.stderr
    line = p.stdout.strip()
    assert '"s3.secret-key": "***"' in line and "PYSPARK_PYTHON=" in line
    assert f"--jars {submit.jar_path()} --name lakeformat-ingest {submit.job_file('ingest')} --config {CONFIG} " \
           "--table user_behavior --date 2024-06-07" in line   # ./config/tables.yaml of the checkout


def test_a_credential_given_to_submit_as_an_option_is_refused(capsys):
    assert main(["submit", "--dry-run", "--option", f"s3.secret-key={SECRET}", "compact", "--table", "x.y"]) == 1
    err = capsys.readouterr().err
    assert "credential on the command line" in err and SECRET not in err


def test_jar_path_prints_the_built_jar():
    p = _cli("jar-path")
    assert p.returncode == 0, p.stderr
    assert Path(p.stdout.strip()).is_file() and p.stdout.strip() == submit.jar_path()
