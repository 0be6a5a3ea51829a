package lakeformat.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StringType$;
import org.apache.spark.sql.types.StructType;

import scala.Option;

/**
 * A {@link LakeformatTable}'s partitions for Spark's partition statements: {@code SHOW PARTITIONS}
 * (the partitions of the table's snapshot that hold live files, listed by the library) and
 * {@code ALTER TABLE ... DROP PARTITION} / {@code TRUNCATE TABLE ... PARTITION} (the library's
 * overwrite of that partition with no rows, one commit). Partitions have no metadata of their own
 * in Paimon: adding one or setting its metadata is refused.
 */
final class Partitions {
  private Partitions() {
  }

  private static String zone() {
    return SparkSession.active().sessionState().conf().sessionLocalTimeZone();
  }

  /** The partitions of {@code snapshot} whose {@code names} columns equal {@code ident}'s values. */
  static InternalRow[] list(String catalog, Identifier table, long snapshot, StructType schema, String[] names,
                            InternalRow ident) {
    List<InternalRow> out = new ArrayList<>();
    if (snapshot < 0) {
      return new InternalRow[0];
    }
    JsonNode answer = SparkCatalog.parse(SparkCatalog.planner().partitions(catalog, table.namespace()[0],
                                                                             table.name(), snapshot));
    String zone = zone();
    for (JsonNode values : answer) {
      InternalRow row = LakeformatTable.partitionRow(schema, values, zone);
      boolean match = true;
      for (int i = 0; i < names.length; i++) {
        int at = schema.fieldIndex(names[i]);
        DataType type = schema.fields()[at].dataType();
        match &= Objects.equals(row.get(at, type), ident.get(i, type));
      }
      if (match) {
        out.add(row);
      }
    }
    return out.toArray(new InternalRow[0]);
  }

  /** Replaces the partition {@code ident} (all partition columns) with no rows; false when it holds none. */
  static boolean drop(String catalog, Identifier table, StructType schema, InternalRow ident) {
    Map<String, String> spec = new LinkedHashMap<>();
    for (int i = 0; i < schema.length(); i++) {
      DataType type = schema.fields()[i].dataType();
      Object text = new Cast(Literal.create(ident.get(i, type), type), StringType$.MODULE$, Option.apply(zone()))
          .eval(null);
      if (text == null) {
        throw new UnsupportedOperationException("lakeformat: " + table + ": a partition with a null value "
            + schema.fields()[i].name() + " cannot be dropped by the catalog yet");
      }
      spec.put(schema.fields()[i].name(), text.toString());
    }
    try {
      return SparkCatalog.parse(SparkCatalog.planner().dropPartition(catalog, table.namespace()[0], table.name(),
                                                                      SparkCatalog.JSON.writeValueAsString(spec)))
          .get("dropped").asBoolean();
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(e);
    }
  }

  static UnsupportedOperationException refused(Identifier table, String what) {
    return new UnsupportedOperationException("lakeformat: " + table + ": " + what + " is not supported: Paimon's "
        + "partitions have no metadata of their own (a partition exists while it holds files)");
  }
}
