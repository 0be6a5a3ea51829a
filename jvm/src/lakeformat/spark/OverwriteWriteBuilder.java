package lakeformat.spark;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.write.SupportsDynamicOverwrite;
import org.apache.spark.sql.connector.write.SupportsOverwriteV2;
import org.apache.spark.sql.connector.write.V1Write;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StringType$;

import scala.Option;

/**
 * The writes of a {@link LakeformatTable}, as Paimon's Spark connector gives them: {@code INSERT INTO}
 * appends; {@code INSERT OVERWRITE} without a partition (static mode) replaces the whole table, with
 * {@code PARTITION (k = v, ...)} (or {@code writeTo(t).overwrite(k = v AND ...)}) that partition;
 * in dynamic mode ({@code spark.sql.sources.partitionOverwriteMode=dynamic},
 * {@code writeTo(t).overwritePartitions()}) the partitions the rows hold. An overwrite condition
 * other than equalities on partition columns is refused by name. The rows reach the library on the
 * driver as a DataFrame (a V1 write; dynamic overwrites get there through {@link DynamicOverwrite}),
 * which writes them and commits once.
 */
final class OverwriteWriteBuilder implements SupportsOverwriteV2, SupportsDynamicOverwrite {
  private final String catalog;
  private final Identifier ident;
  private final List<String> partitionKeys;
  // null: append; "dynamic"; else the JSON object of a static partition ({} = the whole table)
  private String overwrite;

  OverwriteWriteBuilder(String catalog, Identifier ident, List<String> partitionKeys) {
    this.catalog = catalog;
    this.ident = ident;
    this.partitionKeys = partitionKeys;
  }

  @Override
  public WriteBuilder overwriteDynamicPartitions() {
    overwrite = "dynamic";
    return this;
  }

  @Override
  public WriteBuilder truncate() {
    overwrite = "{}";
    return this;
  }

  @Override
  public WriteBuilder overwrite(Predicate[] predicates) {
    Map<String, String> spec = new LinkedHashMap<>();
    for (Predicate p : predicates) {
      addEqualities(p, spec);
    }
    try {
      overwrite = SparkCatalog.JSON.writeValueAsString(spec);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(e);
    }
    return this;
  }

  /** {@code p}'s equalities (partition column = value, joined by AND) into {@code spec}, or a refusal. */
  private void addEqualities(Predicate p, Map<String, String> spec) {
    String op = p.name();
    if (op.equals("ALWAYS_TRUE")) {
      return;
    }
    if (op.equals("AND")) {
      for (Expression c : p.children()) {
        if (!(c instanceof Predicate)) {
          throw refused(p, "");
        }
        addEqualities((Predicate) c, spec);
      }
      return;
    }
    Expression[] c = p.children();
    if (!(op.equals("=") || op.equals("<=>")) || c.length != 2) {
      throw refused(p, "");
    }
    NamedReference ref = c[0] instanceof NamedReference ? (NamedReference) c[0]
        : c[1] instanceof NamedReference ? (NamedReference) c[1] : null;
    Literal<?> lit = c[1] instanceof Literal ? (Literal<?>) c[1] : c[0] instanceof Literal ? (Literal<?>) c[0] : null;
    if (ref == null || lit == null || ref.fieldNames().length != 1) {
      throw refused(p, "");
    }
    String key = null;
    for (String k : partitionKeys) {
      if (k.toLowerCase(Locale.ROOT).equals(ref.fieldNames()[0].toLowerCase(Locale.ROOT))) {
        key = k;
      }
    }
    if (key == null) {
      throw refused(p, ref.fieldNames()[0] + " is not a partition column (partition columns: " + partitionKeys + ")");
    }
    if (lit.value() == null) {
      throw refused(p, "a null partition value");
    }
    if (spec.containsKey(key)) {
      throw refused(p, "two conditions on " + key);
    }
    String zone = SparkSession.active().sessionState().conf().sessionLocalTimeZone();
    Object text = new Cast(new org.apache.spark.sql.catalyst.expressions.Literal(lit.value(), lit.dataType()),
                           StringType$.MODULE$, Option.apply(zone)).eval(null);
    spec.put(key, text.toString());
  }

  private UnsupportedOperationException refused(Predicate p, String why) {
    return new UnsupportedOperationException("lakeformat: " + ident + " is overwritten by equalities on partition "
        + "columns only (as Paimon's connector), not by " + p + (why.isEmpty() ? "" : ": " + why));
  }

  @Override
  public Write build() {
    final String mode = overwrite;
    return (V1Write) () -> (data, ignored) -> {
      // Spark's V1 fallback always passes overwrite=false: what to replace was decided above
      String db = ident.namespace()[0];
      if (mode == null) {
        SparkCatalog.parse(SparkCatalog.planner().insert(catalog, db, ident.name(), data));
      } else {
        SparkCatalog.parse(SparkCatalog.planner().overwrite(catalog, db, ident.name(), data, mode));
      }
    };
  }
}
