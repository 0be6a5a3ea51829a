# Every target is idempotent and works on a fresh machine: it installs what it needs.
PYTHON ?= python3.11
VENV := .venv
ORACLE := .venv-oracle
PY := $(VENV)/bin/python
WAREHOUSE ?= $(or $(LAKEFORMAT_WAREHOUSE),./warehouse)

.PHONY: setup test demo bench java postgres clean

setup: java postgres $(VENV)/.installed $(ORACLE)/.installed

java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "java not found: installing openjdk-17-jre-headless"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; }

# The lock tests start their own throwaway server from these binaries (tests/pg.py).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "PostgreSQL not found: installing postgresql"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; }

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip==25.3
	$(PY) -m pip install -q -e '.[dev,spark,airflow]'
	$(PY) -m pip check
	@touch $@

$(ORACLE)/.installed: oracle-requirements.txt
	@test -x $(ORACLE)/bin/python || $(PYTHON) -m venv $(ORACLE)
	$(ORACLE)/bin/pip install -q -r oracle-requirements.txt
	@touch $@

test: setup
	$(PY) -m pytest -q

demo: setup
	LAKEFORMAT_WAREHOUSE=$(WAREHOUSE) $(PY) -m lakeformat.demo

bench: setup
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) $(ORACLE) warehouse
