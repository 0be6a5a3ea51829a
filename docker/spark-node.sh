#!/usr/bin/env bash
# Runs a Spark standalone master or worker from the pip-installed PySpark (same versions as the
# driver in the Airflow task). Usage: spark-node.sh master | worker spark://host:7077
# Spark's own variables move it (defaults as compose uses them): SPARK_MASTER_HOST,
# SPARK_MASTER_PORT, SPARK_MASTER_WEBUI_PORT, SPARK_WORKER_CORES, SPARK_WORKER_MEMORY,
# SPARK_WORKER_WEBUI_PORT (tests/spark/cluster.py runs this script on loopback ports).
set -euo pipefail
SPARK_HOME="$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
export SPARK_HOME
case "${1:-}" in
  master) exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
            --host "${SPARK_MASTER_HOST:-0.0.0.0}" --port "${SPARK_MASTER_PORT:-7077}" \
            --webui-port "${SPARK_MASTER_WEBUI_PORT:-8080}" ;;
  worker) exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
            --cores "${SPARK_WORKER_CORES:-1}" --memory "${SPARK_WORKER_MEMORY:-1g}" --webui-port "${SPARK_WORKER_WEBUI_PORT:-8081}" \
            "${2:?master URL}" ;;
  *) echo "usage: spark-node.sh master | worker spark://host:7077" >&2; exit 2 ;;
esac
