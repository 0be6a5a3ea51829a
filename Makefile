# Every target is idempotent and works on a fresh machine: it installs what it needs.
PYTHON ?= python3.11
VENV := .venv
ORACLE := .venv-oracle
PY := $(VENV)/bin/python
WAREHOUSE ?= $(or $(LAKEFORMAT_WAREHOUSE),./warehouse)
PYFILES ?= dist/lakeformat.zip
# lakeformat's Spark jar (lakeformat.spark.JAR, for spark.jars / spark-submit --jars): the JVM side
# of the native write, compiled against the Spark the venv's pyspark ships.
JAR := lakeformat/spark/lakeformat-spark.jar
JAVA_SOURCES := $(wildcard jvm/src/lakeformat/spark/*.java)
JAVA_RESOURCES := $(wildcard jvm/resources/META-INF/services/*)
# The installer: uv, pinned, put into the venv with pip. The venvs are installed from lock files
# that pin the whole resolved set (requirements.lock, oracle-requirements.lock): `make lock`
# writes them after a dependency change in pyproject.toml or oracle-requirements.txt, and setup
# refuses a lock that was not written from the current dependencies.
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
LOCK := requirements.lock
ORACLE_LOCK := oracle-requirements.lock
EXTRAS := --extra dev --extra spark --extra pipeline
# a digest of what the locks are written from (the dependency lists, not the rest of the files)
DEPS_DIGEST = $(shell $(PYTHON) -c 'import hashlib, json, tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
  print(hashlib.sha256(json.dumps([p["dependencies"], p["optional-dependencies"], p["requires-python"]], sort_keys=True).encode()).hexdigest()[:16])')
ORACLE_DIGEST = $(shell sha256sum oracle-requirements.txt | cut -c1-16)

.PHONY: setup test lint check docs demo airflow bench bench-compare bytecode java jar postgres chromium compose-cli clean pyfiles lock check-lock

setup: java postgres chromium compose-cli $(VENV)/.installed $(ORACLE)/.installed $(JAR)

# PySpark runs on Java; lakeformat's Spark jar is compiled with its javac and jar.
java:
	@command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 && command -v jar >/dev/null 2>&1 || { \
	  echo "a JDK was not found: installing openjdk-17-jdk-headless"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless; }

jar: $(JAR)
$(JAR): $(JAVA_SOURCES) $(JAVA_RESOURCES) $(VENV)/.installed | java
	rm -rf build/jvm && mkdir -p build/jvm
	javac --release 17 -Xlint:all,-path -Werror -d build/jvm \
	  -cp "$$($(PY) -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')/*" \
	  $(JAVA_SOURCES)
	jar --create --file $@ -C build/jvm . -C jvm/resources .

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

$(UV):
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check uv==$(UV_VERSION)

check-lock:
	@grep -qx '# dependencies: $(DEPS_DIGEST)' $(LOCK) || { echo "error: $(LOCK) was not written from \
	the dependencies in pyproject.toml (changed since?): run 'make lock' and commit both files" >&2; exit 1; }
	@grep -qx '# dependencies: $(ORACLE_DIGEST)' $(ORACLE_LOCK) || { echo "error: $(ORACLE_LOCK) was not \
	written from oracle-requirements.txt (changed since?): run 'make lock' and commit both files" >&2; exit 1; }

# Re-resolves only what changed: the pins already in a lock are kept where they still fit.
lock: $(UV)
	$(UV) pip compile -q pyproject.toml $(EXTRAS) --universal --python-version 3.11 -o $(LOCK)
	sed -i '1i # dependencies: $(DEPS_DIGEST)' $(LOCK)
	$(UV) pip compile -q oracle-requirements.txt --universal --python-version 3.11 -o $(ORACLE_LOCK)
	sed -i '1i # dependencies: $(ORACLE_DIGEST)' $(ORACLE_LOCK)

# --offline first: with every pinned package in uv's cache this takes seconds (online, uv
# revalidates the index and rebuilds sdist-only packages such as pyspark); else from the index.
$(VENV)/.installed: $(LOCK) pyproject.toml | $(UV)
	@$(MAKE) -s check-lock
	$(UV) pip install -q --python $(PY) --offline -r $(LOCK) 2>/dev/null || $(UV) pip install -q --python $(PY) -r $(LOCK)
	$(UV) pip install -q --python $(PY) --offline --no-deps -e . 2>/dev/null || $(UV) pip install -q --python $(PY) --no-deps -e .
	@# setuptools leaves lakeformat.egg-info here; the installed metadata is the venv's. Left in the
	@# checkout it is a second lakeformat to every process that has the checkout on its path, and
	@# Airflow then finds the plugin's entry point twice ("already registered").
	rm -rf lakeformat.egg-info
	$(PY) -m pip check
	@$(MAKE) -s bytecode
	@touch $@

# uv installs no .pyc files, and where PYTHONDONTWRITEBYTECODE is set no process writes them: then
# every interpreter compiles numpy, pyarrow and lakeformat from source, which doubles the start-up
# of each process (`import lakeformat` 1.2 s against 0.55 s with .pyc files on this machine; the
# CLI, the tests' and Spark's Python workers, Airflow tasks). Compiled once here (a minute or two).
bytecode:
	@$(PY) -m compileall -q -j 0 $$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))') lakeformat \
	  >/dev/null 2>&1 || true

$(ORACLE)/.installed: $(ORACLE_LOCK) oracle-requirements.txt | $(UV)
	@$(MAKE) -s check-lock
	@test -x $(ORACLE)/bin/python || $(UV) venv -q --python $(PYTHON) $(ORACLE)
	$(UV) pip install -q --python $(ORACLE)/bin/python --offline -r $(ORACLE_LOCK) 2>/dev/null \
	  || $(UV) pip install -q --python $(ORACLE)/bin/python -r $(ORACLE_LOCK)
	@touch $@

test: setup lint
	$(VENV)/bin/lint-imports
	@$(MAKE) -s docs
	$(PY) -m pytest -q --durations=40

# The docs site (mkdocs.yml, docs/) into build/site; --strict makes every warning (a broken link,
# a missing page, a benchmark results file that is gone) an error. Preview: .venv/bin/mkdocs serve
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# ruff on the whole tree and mypy on the library ([tool.ruff] and [tool.mypy] in pyproject.toml),
# side by side; fails if either does.
LINT = $(VENV)/bin/ruff check . & ruff=$$!; $(VENV)/bin/mypy; types=$$?; wait $$ruff && exit $$types
# the import contracts ([tool.importlinter]), quiet unless one is broken
IMPORTS = out=$$($(VENV)/bin/lint-imports 2>&1) || { echo "$$out"; exit 1; }

lint: $(VENV)/.installed
	@$(LINT)

# The fast loop before a commit: lint and the import contracts on one core while the tests that
# start no Spark, Airflow or server run on the other (`make test` runs everything). Needs the venv only.
check: $(VENV)/.installed
	@( ( $(LINT) ) && $(IMPORTS) ) & static=$$!; \
	$(PY) -m pytest -m "not slow" -q; tests=$$?; wait $$static && exit $$tests

demo: setup
	LAKEFORMAT_WAREHOUSE=$(WAREHOUSE) $(PY) -m lakeformat.pipeline.local.demo --config config/tables.yaml \
	  --dags dags --plugins plugins --oracle-python $(ORACLE)/bin/python

# Airflow 3 on this machine (API server, scheduler, DAG processor, triggerer) on a PostgreSQL of its
# own, state in ./.airflow; prints the URL and the login; Ctrl-C stops every process.
airflow: setup
	LAKEFORMAT_WAREHOUSE=$(WAREHOUSE) $(PY) -m lakeformat.pipeline.local.airflow_server --port $(or $(AIRFLOW_PORT),8080)

bench: setup
	$(PY) benchmarks/run.py

# The regression guard: the working tree (or CURRENT=<dir>) against BASE (a commit, default HEAD)
# checked out by `git worktree add` into a temp dir, interleaved; exits 1 naming any core
# benchmark more than 10% slower (benchmarks/compare.py; ARGS="--blocks 8 --rounds 7" etc.).
BASE ?= HEAD
bench-compare: $(VENV)/.installed
	$(PY) benchmarks/compare.py --base $(BASE) $(if $(CURRENT),--current $(CURRENT)) $(ARGS)

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
	rm -rf $(VENV) $(ORACLE) warehouse build $(JAR)
