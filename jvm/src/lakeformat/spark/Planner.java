package lakeformat.spark;

/**
 * The Python library's answers to {@link SparkCatalog}: implemented in Python (lakeformat.spark.sql)
 * and registered through PySpark's Py4J callback server by {@code lakeformat.spark.register(spark)},
 * so a table is planned by lakeformat's own scan and nowhere else. Every answer is JSON text.
 *
 * <p>{@code catalog} is the catalog's options as a JSON object (warehouse and storage options).
 */
public interface Planner {
  /** A JSON array of the warehouse's database names. */
  String namespaces(String catalog);

  /** A JSON array of the table names of {@code database}. */
  String tables(String catalog, String database);

  /**
   * The table at {@code version} (a snapshot id or a tag name; empty: the latest snapshot) or at
   * {@code timestampMillis} (when not negative), or an empty string when there is no such table:
   * {@code {"schema": <Spark StructType JSON, table order>, "schemaId": <id>, "partitionKeys": [...],
   * "primaryKeys": [...], "snapshot": <id or null>, "properties": {...}}}.
   */
  String table(String catalog, String database, String name, String version, long timestampMillis);

  /**
   * The files of snapshot {@code snapshot} of the table that Spark reads as the columns of schema
   * {@code schemaId} (the one {@link #table} answered with):
   * {@code {"files": [{"path": <Hadoop path>, "size": <bytes>, "partition": [<value as text or null>,
   * ...]}], "vectors": <DeletionVectorParquet's option, or "">}}; fails, naming why, when a section
   * needs lakeformat's merge.
   */
  String plan(String catalog, String database, String name, long snapshot, long schemaId);

  /**
   * The files of that plan whose statistics may hold rows matching every one of {@code filters}
   * (a JSON array of Spark's simple filters, see {@link DataFilterPruner}):
   * {@code {"files": [<Hadoop path>, ...]}}, or {@code {"files": null}} when the filters prune nothing.
   */
  String prune(String catalog, String database, String name, long snapshot, long schemaId, String filters);

  /**
   * Creates the table (and its database when missing): {@code schema} a Spark StructType as JSON,
   * {@code partitionKeys} a JSON array, {@code properties} a JSON object (table options, and
   * {@code primary-key} as Paimon's connector takes it); answers as {@link #table} does.
   */
  String create(String catalog, String database, String name, String schema, String partitionKeys,
                String properties);

  /** Appends the rows of {@code data} (on the driver: lakeformat writes it as a Spark job) and commits. */
  String insert(String catalog, String database, String name, org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> data);

  /** Creates the database {@code database} ({@code {}}), or answers an error when it exists. */
  String createDatabase(String catalog, String database);

  /** Drops the database, with its tables when {@code cascade}: {@code {"dropped": <bool>}}. */
  String dropDatabase(String catalog, String database, boolean cascade);

  /** Drops the table (its directory, as Paimon's filesystem catalog does): {@code {"dropped": <bool>}}. */
  String dropTable(String catalog, String database, String name);

  /**
   * Replaces with the rows of {@code data} (on the driver, as {@link #insert}) and commits once:
   * {@code overwrite} is {@code "dynamic"} (the partitions the rows hold; the whole table when it has
   * no partitions) or a JSON object of a static partition, values as text ({@code {}}: the whole table).
   */
  String overwrite(String catalog, String database, String name, org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> data,
                   String overwrite);

  /**
   * Applies {@code ALTER TABLE}'s changes ({@link TableChanges}' JSON array) with the library's schema
   * evolution, as one new schema: {@code {}}, or an error naming what the library refuses.
   */
  String alter(String catalog, String database, String name, String changes);

  /** {@code TRUNCATE TABLE}: an overwrite of the whole table with no rows ({@code {}}). */
  String truncate(String catalog, String database, String name);

  /** Renames the table (the library's {@code Catalog.rename_table}): {@code {}}, or an error naming why not. */
  String rename(String catalog, String database, String name, String newDatabase, String newName);

  /** The partitions of snapshot {@code snapshot} that hold live files: a JSON array of arrays of value texts. */
  String partitions(String catalog, String database, String name, long snapshot);

  /**
   * Replaces the partition {@code partition} (a JSON object of value texts) with no rows:
   * {@code {"dropped": <whether it held files>}}.
   */
  String dropPartition(String catalog, String database, String name, String partition);

  /**
   * {@code DELETE FROM}: deletes the rows of the latest snapshot matching every one of {@code filters}
   * (a JSON array as {@link DataFilterPruner} writes them, with AND, OR, NOT, AlwaysTrue, AlwaysFalse)
   * by primary key, one commit: {@code {"deleted": <rows>}}, or an error naming what is refused.
   */
  String delete(String catalog, String database, String name, String filters);
}
