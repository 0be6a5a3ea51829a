# The image of every Airflow service and of the Spark master and workers (docker-compose.yml):
# one image, so the Spark driver (in the Airflow task) and the executors run the same Python,
# PySpark and lakeformat. The project is installed editable from /opt/lakeformat, where compose
# also mounts the working tree, so code changes apply without a rebuild.
FROM apache/airflow:3.3.2-python3.11

USER root
# spark-submit and the Spark master/workers need a JVM (Debian bookworm's default is Java 17), and
# lakeformat's Spark jar its compiler.
RUN apt-get update \
 && apt-get install -y --no-install-recommends default-jdk-headless procps \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/default-java

USER airflow
COPY --chown=airflow:root pyproject.toml README.md /opt/lakeformat/
COPY --chown=airflow:root lakeformat /opt/lakeformat/lakeformat
# Airflow stays at the base image's version: the extras pin the same apache-airflow==3.3.2.
RUN pip install --no-cache-dir "apache-airflow==3.3.2" -e "/opt/lakeformat[spark,pipeline]"
# lakeformat's Spark jar (as `make jar` builds it), against the Spark the image's pyspark ships;
# spark-submit --jars takes it to the executors
COPY --chown=airflow:root jvm /opt/lakeformat/jvm
RUN mkdir /tmp/jvm \
 && javac --release 17 -d /tmp/jvm \
      -cp "$(python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')/*" \
      /opt/lakeformat/jvm/src/lakeformat/spark/*.java \
 && jar --create --file /opt/lakeformat/lakeformat/spark/lakeformat-spark.jar -C /tmp/jvm . \
 && rm -rf /tmp/jvm
COPY --chown=airflow:root docker/spark-node.sh /opt/lakeformat-docker/spark-node.sh

ENV PYSPARK_PYTHON=python \
    LAKEFORMAT_CONFIG=/opt/lakeformat/config/tables.yaml
WORKDIR /opt/lakeformat
