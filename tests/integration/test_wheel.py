"""The project as users install it: a wheel built from the checkout, installed into a fresh
virtual environment outside it (dependencies from requirements.lock), run from another
directory with nothing of the checkout on the path. The CLI, a job with --config, a DagBag and
`airflow dags list --local` over a copy of dags/ must work with only the config path set; the
Airflow plugin and the lakeformat connection type register from the package's entry points,
with no plugins folder."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.project import CONFIG, DAGS, ROOT

pytestmark = pytest.mark.slow   # builds a wheel, installs ~200 packages, runs Spark and Airflow


def _uv() -> str:
    uv = Path(sys.executable).parent / "uv"
    if uv.exists():
        return str(uv)
    if shutil.which("uv"):
        return shutil.which("uv")
    pytest.fail("uv is not installed next to this Python: run `make setup`")


def _run(cmd: list, cwd: Path, env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """(venv bin dir, a working directory outside the checkout, a clean environment)."""
    tmp = tmp_path_factory.mktemp("wheel")
    uv = _uv()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LAKEFORMAT_", "AIRFLOW", "VIRTUAL_ENV"))}
    # built from a copy of the tracked files: setuptools writes build/ and *.egg-info next to the
    # sources it builds, and an egg-info in the checkout is a second lakeformat distribution to
    # every process with the checkout on its path (Airflow then finds the plugin twice)
    src = tmp / "src"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    _run([uv, "build", "-q", "--wheel", "--out-dir", tmp / "dist", src], tmp, env)
    (wheel,) = (tmp / "dist").glob("lakeformat-*.whl")
    _run([uv, "venv", "-q", "--python", sys.executable, tmp / "venv"], tmp, env)
    python = tmp / "venv" / "bin" / "python"
    install = [uv, "pip", "install", "-q", "--python", python, "-r", ROOT / "requirements.lock", wheel]
    if subprocess.run([*map(str, install), "--offline"], env=env, capture_output=True).returncode != 0:
        _run(install, tmp, env)   # not everything in uv's cache: from the index
    work = tmp / "elsewhere"
    work.mkdir()
    shutil.copy(CONFIG, work / "tables.yaml")
    shutil.copytree(DAGS, work / "dags")
    return {"bin": tmp / "venv" / "bin", "work": work, "env": env}


def test_the_installed_package_is_the_wheel_not_the_checkout(installed):
    out = _run([installed["bin"] / "python", "-c", "import lakeformat, lakeformat.pipeline.submit as j; "
                "print(lakeformat.__file__); print(j.job_file('ingest'))"], installed["work"], installed["env"])
    package, job = out.stdout.split()
    assert "site-packages" in package and not package.startswith(str(ROOT))
    assert Path(job).exists() and "site-packages" in job   # what the DAGs spark-submit


def test_the_cli_and_a_job_with_config_work_from_another_directory(installed):
    b, work, env = installed["bin"], installed["work"], installed["env"]
    checked = _run([b / "lakeformat", "validate-config", work / "tables.yaml"], work, env)
    assert "is valid: 2 table(s)" in checked.stdout
    make = ("from lakeformat.pipeline.config import load_config; from lakeformat.pipeline.ingest import create_table; "
            "import lakeformat as lf, pyarrow as pa, datetime as dt; "
            "spec = load_config('tables.yaml').table('user_behavior'); t = create_table(lf.Catalog('wh'), spec); "
            "[t.write(pa.table({'user_id': [7], 'item_id': [i], 'behavior': ['pv'], 'price': [1.0], "
            "'ts': [dt.datetime(2024, 6, 1)], 'dt': ['2024-06-01']}, schema=t.arrow_schema())) for i in range(4)]")
    _run([b / "python", "-c", make], work, env)
    job = _run([b / "python", "-m", "lakeformat.pipeline.jobs.compact", "--config", "tables.yaml",
                "--table", "user_behavior", "--warehouse", "wh"], work, env)
    assert "compacted demo.user_behavior" in job.stdout
    listed = _run([b / "lakeformat", "--warehouse", "wh", "--json", "tables"], work, env)
    assert json.loads(listed.stdout) == [{"table": "demo.user_behavior"}]


def test_the_dags_load_with_only_the_config_path_set(installed):
    b, work = installed["bin"], installed["work"]
    env = {**installed["env"], "LAKEFORMAT_CONFIG": str(work / "tables.yaml"), "AIRFLOW_HOME": str(work / "airflow"),
           "AIRFLOW__CORE__DAGS_FOLDER": str(work / "dags"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    bag = ("import json; from airflow.dag_processing.dagbag import BundleDagBag; "
           "bag = BundleDagBag(dag_folder='dags', bundle_path='dags'); "
           "print(json.dumps({'dags': sorted(bag.dags), 'errors': {k: str(v) for k, v in bag.import_errors.items()}}))")
    out = json.loads(_run([b / "python", "-c", bag], work, env).stdout.strip().splitlines()[-1])
    dag_ids = ["lakeformat_compaction", "lakeformat_ingest_item_price", "lakeformat_ingest_user_behavior",
               "lakeformat_maintenance"]
    assert out == {"dags": dag_ids, "errors": {}}
    _run([b / "airflow", "db", "migrate"], work, env)
    listed = _run([b / "airflow", "dags", "list", "--local", "-o", "json"], work, env)
    assert sorted(d["dag_id"] for d in json.loads(listed.stdout.strip().splitlines()[-1])) == dag_ids


def test_the_plugin_and_the_connection_type_register_without_a_plugins_folder(installed):
    b, work = installed["bin"], installed["work"]
    (work / "no-plugins").mkdir()
    env = {**installed["env"], "AIRFLOW_HOME": str(work / "airflow-entry-points"),
           "AIRFLOW__CORE__PLUGINS_FOLDER": str(work / "no-plugins"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    plugins = json.loads(_run([b / "airflow", "plugins", "-o", "json"], work, env).stdout.strip().splitlines()[-1])
    (plugin,) = [p for p in plugins if p["name"] == "lakeformat"]
    assert "lakeformat" in str(plugin.get("source")) and "no-plugins" not in str(plugin.get("source"))
    assert "Lakehouse" in json.dumps(plugin)   # its page and menu entry
    form = ("import json; from airflow.providers_manager import ProvidersManager; m = ProvidersManager(); "
            "h = m.hooks['lakeformat']; "
            "print(json.dumps({'provider': m.providers['lakeformat'].data['name'], 'hook': h.hook_class_name, "
            "'name': h.hook_name, 'form': m.field_behaviours['lakeformat']}))")
    got = json.loads(_run([b / "python", "-c", form], work, env).stdout.strip().splitlines()[-1])
    assert got["provider"] == "lakeformat" and got["name"] == "Lakeformat"
    assert got["hook"] == "lakeformat.pipeline.airflow.hooks.LakeformatHook"
    assert got["form"]["relabeling"] == {"host": "Warehouse URI", "login": "S3 access key",
                                         "password": "S3 secret key", "extra": "Catalog options (JSON)"}
    assert sorted(got["form"]["hidden_fields"]) == ["port", "schema"]
    assert "s3.endpoint" in json.dumps(got["form"]["placeholders"])
