package lakeformat.spark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * The Python library's answers to {@link LakeformatSource} ({@code format("lakeformat")}):
 * implemented in Python (lakeformat.spark.format_native) and registered through PySpark's Py4J
 * callback server by {@code lakeformat.spark.register(spark)}. Every answer is JSON text; an error
 * is {@code {"error", "kind"}}, as the {@link Planner}'s are.
 *
 * <p>{@code options} is the data source's options as a JSON object (as the user gave them).
 */
public interface SourceResolver {
  /**
   * How a batch read with {@code options} is read: {@code {"native": true, "catalog": <the
   * Planner's catalog options, JSON text>, "database": ..., "name": ..., "table": <as
   * Planner.table answers>}} when Spark's Parquet scan reads it as the SQL catalog does, else
   * {@code {"native": false, "reason": ...}} (the Python data source reads it).
   */
  String resolve(String options);

  /** Writes {@code data} as {@code lakeformat.spark.write} does with these options: one commit. */
  String write(String options, Dataset<Row> data, boolean overwrite);
}
