package lakeformat.spark;

/**
 * The Python library's answers for a lakeformat catalog's procedures ({@code CALL lf.sys.compact(...)})
 * and system tables ({@code lf.db.`t$snapshots`}): implemented in Python (lakeformat.spark.sql_system)
 * and registered through PySpark's Py4J callback server by {@code lakeformat.spark.register(spark)},
 * next to the {@link Planner}. Every answer is JSON text; an error is {@code {"error", "kind"}}.
 *
 * <p>Rows come as {@code {"schema": <Spark StructType JSON>, "rows": [[value, ...], ...]}}: strings,
 * numbers, booleans, nulls, and TIMESTAMP_NTZ as microseconds since the epoch ({@link LocalRows}).
 */
public interface SystemPlanner {
  /** A JSON array of the procedure names under {@code sys}. */
  String procedures();

  /**
   * The procedure {@code name}: {@code {"parameters": [{"name", "type": <Spark type JSON>, "required"}],
   * "description"}}, or an error naming the procedures there are.
   */
  String procedure(String name);

  /** Runs procedure {@code name} with {@code args} (a JSON object of the arguments given); answers rows. */
  String call(String catalog, String name, String args);

  /**
   * The system table {@code name} ({@code t$snapshots}, ...) of {@code database} at {@code version}
   * (a snapshot id or tag, or empty) or {@code timestampMillis} (when not negative): rows; an empty
   * string when {@code name} is a table or a branch ({@code t$branch_b}), not a system table;
   * {@code {"missing": true}} when the table of the system table does not exist; an
   * error naming the system tables there are when its suffix is none of them.
   */
  String systemTable(String catalog, String database, String name, String version, long timestampMillis);
}
