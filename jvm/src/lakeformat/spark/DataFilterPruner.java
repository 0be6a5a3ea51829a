package lakeformat.spark;

import java.math.BigDecimal;
import java.time.LocalDate;
import java.util.HashSet;
import java.util.Set;
import java.util.function.Function;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.DataSourceStrategy$;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;

import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Files pruned by a query's data filters, decided by lakeformat: Spark's data filters (those on
 * columns that are not partition keys) as simple filters in JSON, to {@link Planner#prune}, which
 * plans the snapshot with them as a lakeformat predicate and answers the files whose statistics
 * (min/max and null counts in the manifests) may hold matching rows. {@link PlannedFileIndex}
 * lists only those. Filters or values with no JSON form here (timestamps, binary, string
 * prefixes...) are left out: a weaker predicate prunes less, never a file it needs. Spark still
 * evaluates every filter on the rows it reads.
 */
final class DataFilterPruner implements Function<Seq<Expression>, Set<String>> {
  private final String catalog;
  private final Identifier ident;
  private final long snapshot;
  private final long schemaId;

  DataFilterPruner(String catalog, Identifier ident, long snapshot, long schemaId) {
    this.catalog = catalog;
    this.ident = ident;
    this.snapshot = snapshot;
    this.schemaId = schemaId;
  }

  /** The Hadoop paths (as {@link Path#toString}) of the files to read, or null to read all. */
  @Override
  public Set<String> apply(Seq<Expression> dataFilters) {
    ArrayNode filters = SparkCatalog.JSON.createArrayNode();
    for (Expression e : CollectionConverters.asJava(dataFilters)) {
      Option<Filter> f = DataSourceStrategy$.MODULE$.translateFilter(e, false);
      JsonNode json = f.isDefined() ? json(f.get()) : null;
      if (json != null) {
        filters.add(json);
      }
    }
    if (filters.isEmpty()) {
      return null;
    }
    String text;
    try {
      text = SparkCatalog.JSON.writeValueAsString(filters);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
    JsonNode answer = SparkCatalog.parse(SparkCatalog.planner().prune(catalog, ident.namespace()[0], ident.name(),
                                                                      snapshot, schemaId, text));
    if (answer.get("files").isNull()) {
      return null;
    }
    Set<String> keep = new HashSet<>();
    answer.get("files").forEach(p -> keep.add(new Path(p.asText()).toString()));
    return keep;
  }

  /** One filter as {@code {"op", "attribute", "value"/"values"/"children"}}, or null when it has no JSON form. */
  static JsonNode json(Filter f) {
    ObjectNode out = SparkCatalog.JSON.createObjectNode();
    out.put("op", f.getClass().getSimpleName());
    if (f instanceof And || f instanceof Or) {
      Filter[] children = f instanceof And a ? new Filter[] {a.left(), a.right()}
                                             : new Filter[] {((Or) f).left(), ((Or) f).right()};
      ArrayNode kids = out.putArray("children");
      for (Filter c : children) {
        JsonNode k = json(c);
        if (k == null && f instanceof Or) {
          return null;   // an OR with a side unknown could match anything
        }
        if (k != null) {
          kids.add(k);
        }
      }
      return kids.isEmpty() ? null : out;
    }
    if (f instanceof Not n) {
      JsonNode child = json(n.child());
      if (child == null) {
        return null;
      }
      out.set("child", child);
      return out;
    }
    String attribute;
    Object value = null;
    Object[] values = null;
    if (f instanceof IsNull x) {
      attribute = x.attribute();
    } else if (f instanceof IsNotNull x) {
      attribute = x.attribute();
    } else if (f instanceof EqualTo x) {
      attribute = x.attribute();
      value = x.value();
    } else if (f instanceof EqualNullSafe x) {
      attribute = x.attribute();
      value = x.value();
    } else if (f instanceof GreaterThan x) {
      attribute = x.attribute();
      value = x.value();
    } else if (f instanceof GreaterThanOrEqual x) {
      attribute = x.attribute();
      value = x.value();
    } else if (f instanceof LessThan x) {
      attribute = x.attribute();
      value = x.value();
    } else if (f instanceof LessThanOrEqual x) {
      attribute = x.attribute();
      value = x.value();
    } else if (f instanceof In x) {
      attribute = x.attribute();
      values = x.values();
    } else {
      return null;
    }
    out.put("attribute", attribute);
    if (values != null) {
      ArrayNode vs = out.putArray("values");
      for (Object v : values) {
        JsonNode j = value(v);
        if (j == null) {
          return null;
        }
        vs.add(j);
      }
    } else if (value != null || f instanceof EqualTo || f instanceof EqualNullSafe) {
      JsonNode j = value(value);
      if (j == null) {
        return null;
      }
      out.set("value", j);
    }
    return out;
  }

  /** A literal as {@code {"type", "value"}}: numbers, strings, booleans, dates, decimals; else null. */
  private static JsonNode value(Object v) {
    ObjectNode out = SparkCatalog.JSON.createObjectNode();
    if (v == null) {
      out.put("type", "null");
    } else if (v instanceof Boolean b) {
      out.put("type", "bool").put("value", b);
    } else if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) {
      out.put("type", "int").put("value", ((Number) v).longValue());
    } else if (v instanceof Float || v instanceof Double) {
      out.put("type", "float").put("value", ((Number) v).doubleValue());
    } else if (v instanceof String s) {
      out.put("type", "str").put("value", s);
    } else if (v instanceof BigDecimal d) {
      out.put("type", "decimal").put("value", d.toPlainString());
    } else if (v instanceof java.sql.Date d) {
      out.put("type", "date").put("value", d.toLocalDate().toString());
    } else if (v instanceof LocalDate d) {
      out.put("type", "date").put("value", d.toString());
    } else {
      return null;
    }
    return out;
  }
}
