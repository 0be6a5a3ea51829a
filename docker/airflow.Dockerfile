# The image of every Airflow service and of the Spark master and workers (docker-compose.yml):
# one image, so the Spark driver (in the Airflow task) and the executors run the same Python,
# PySpark and lakeformat. The project is installed editable from /opt/lakeformat, where compose
# also mounts the working tree, so code changes apply without a rebuild.
FROM apache/airflow:3.3.2-python3.11

USER root
# spark-submit and the Spark master/workers need a JVM (Debian bookworm's default is Java 17).
RUN apt-get update \
 && apt-get install -y --no-install-recommends default-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/default-java

USER airflow
COPY --chown=airflow:root pyproject.toml README.md /opt/lakeformat/
COPY --chown=airflow:root lakeformat /opt/lakeformat/lakeformat
# Airflow stays at the base image's version: the extras pin the same apache-airflow==3.3.2.
RUN pip install --no-cache-dir "apache-airflow==3.3.2" -e "/opt/lakeformat[spark,pipeline]"
COPY --chown=airflow:root docker/spark-node.sh /opt/lakeformat-docker/spark-node.sh

ENV PYSPARK_PYTHON=python \
    LAKEFORMAT_CONFIG=/opt/lakeformat/config/tables.yaml
WORKDIR /opt/lakeformat
