package lakeformat.spark;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType$;
import org.apache.spark.sql.types.LongType$;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType$;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Rows the Python library computed on the driver (a procedure's result, a system table), handed
 * to Spark as a {@link LocalScan}: metadata-sized, so no tasks. The answer is
 * {@code {"schema": <StructType JSON>, "rows": [[...], ...]}}; columns are strings, ints, longs,
 * booleans or TIMESTAMP_NTZ (microseconds since the epoch, the wall-clock time Paimon shows).
 */
final class LocalRows implements LocalScan {
  private final StructType schema;
  private final InternalRow[] rows;
  private final String description;

  LocalRows(JsonNode answer, String description) {
    this.schema = (StructType) DataType.fromJson(answer.get("schema").toString());
    this.description = description;
    List<InternalRow> out = new ArrayList<>();
    for (JsonNode row : answer.get("rows")) {
      Object[] values = new Object[schema.fields().length];
      for (int i = 0; i < values.length; i++) {
        values[i] = value(row.get(i), schema.fields()[i].dataType());
      }
      out.add(new GenericInternalRow(values));
    }
    this.rows = out.toArray(new InternalRow[0]);
  }

  private static Object value(JsonNode v, DataType type) {
    if (v == null || v.isNull()) {
      return null;
    }
    if (type instanceof StringType) {
      return UTF8String.fromString(v.asText());
    }
    if (type == IntegerType$.MODULE$) {
      return v.asInt();
    }
    if (type == LongType$.MODULE$ || type == TimestampNTZType$.MODULE$) {
      return v.asLong();
    }
    if (type == BooleanType$.MODULE$) {
      return v.asBoolean();
    }
    throw new IllegalStateException("lakeformat: no local rows of type " + type.simpleString());
  }

  /** A procedure's argument (as Spark evaluated it) as JSON: text, a number or a boolean. */
  static Object argument(Object v) {
    if (v instanceof UTF8String) {
      return v.toString();
    }
    return v;   // Integer, Long, Boolean, null (the procedure checks what it was given)
  }

  @Override
  public StructType readSchema() {
    return schema;
  }

  @Override
  public InternalRow[] rows() {
    return rows;
  }

  @Override
  public String description() {
    return description;
  }
}
