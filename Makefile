# Every target is idempotent and works on a fresh machine: it installs what it needs.
PYTHON ?= python3.11
VENV := .venv
ORACLE := .venv-oracle
PY := $(VENV)/bin/python
WAREHOUSE ?= $(or $(LAKEFORMAT_WAREHOUSE),./warehouse)
PYFILES ?= dist/lakeformat.zip

.PHONY: setup test demo airflow bench java postgres chromium compose-cli clean pyfiles

setup: java postgres chromium compose-cli $(VENV)/.installed $(ORACLE)/.installed

java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "java not found: installing openjdk-17-jre-headless"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; }

# The lock tests start their own throwaway server from these binaries (tests/pg.py).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "PostgreSQL not found: installing postgresql"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; }

# The UI tests drive headless Chromium through selenium and chromedriver (tests/airflow_plugin, tests/airflow_ui).
chromium:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || { \
	  echo "chromium or chromedriver not found: installing chromium chromium-driver"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }

# `docker compose config` validates docker-compose.yml (no Docker engine needed): Debian's
# docker-compose when the docker CLI has no compose plugin.
compose-cli:
	@docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 || { \
	  echo "docker compose not found: installing docker-compose"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose; }

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip==25.3
	$(PY) -m pip install -q -e '.[dev,spark,pipeline]'
	$(PY) -m pip check
	@touch $@

$(ORACLE)/.installed: oracle-requirements.txt
	@test -x $(ORACLE)/bin/python || $(PYTHON) -m venv $(ORACLE)
	$(ORACLE)/bin/pip install -q -r oracle-requirements.txt
	@touch $@

test: setup
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q

demo: setup
	LAKEFORMAT_WAREHOUSE=$(WAREHOUSE) $(PY) -m lakeformat.pipeline.demo --config config/tables.yaml \
	  --dags dags --plugins plugins --oracle-python $(ORACLE)/bin/python

# Airflow 3 on this machine (API server, scheduler, DAG processor, triggerer) on a PostgreSQL of its
# own, state in ./.airflow; prints the URL and the login; Ctrl-C stops every process.
airflow: setup
	LAKEFORMAT_WAREHOUSE=$(WAREHOUSE) $(PY) -m lakeformat.pipeline.airflow_server --port $(or $(AIRFLOW_PORT),8080)

bench: setup
	$(PY) benchmarks/run.py

# The lakeformat package as one archive for a Spark cluster: spark-submit --py-files dist/lakeformat.zip
# jobs/<job>.py (the executors need lakeformat's dependencies, pyproject.toml, installed).
# PYFILES=path/to.zip writes it elsewhere (tests/spark/test_cluster.py).
pyfiles:
	@mkdir -p $(dir $(PYFILES))
	$(or $(wildcard $(PY)),$(PYTHON)) -c "import pathlib, zipfile; \
	z = zipfile.ZipFile('$(PYFILES)', 'w', zipfile.ZIP_DEFLATED); \
	[z.write(p, p.as_posix()) for p in sorted(pathlib.Path('lakeformat').rglob('*.py'))]; z.close()"
	@echo "$(PYFILES): ship it with spark-submit --py-files $(PYFILES)"

clean:
	rm -rf $(VENV) $(ORACLE) warehouse
