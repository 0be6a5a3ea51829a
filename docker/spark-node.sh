#!/usr/bin/env bash
# Runs a Spark standalone master or worker from the pip-installed PySpark (same versions as the
# driver in the Airflow task). Usage: spark-node.sh master | worker spark://host:7077
set -euo pipefail
SPARK_HOME="$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
export SPARK_HOME
case "${1:-}" in
  master) exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
            --host 0.0.0.0 --port 7077 --webui-port 8080 ;;
  worker) exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
            --cores "${SPARK_WORKER_CORES:-1}" --memory "${SPARK_WORKER_MEMORY:-1g}" --webui-port 8081 "${2:?master URL}" ;;
  *) echo "usage: spark-node.sh master | worker spark://host:7077" >&2; exit 2 ;;
esac
