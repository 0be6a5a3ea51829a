package lakeformat.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.internal.connector.PredicateUtils;
import org.apache.spark.sql.sources.AlwaysFalse;
import org.apache.spark.sql.sources.AlwaysTrue;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;

import scala.Option;

/**
 * {@code DELETE FROM <table> WHERE ...} ({@link LakeformatTable}'s {@code SupportsDelete}): Spark's
 * conjuncts as JSON ({@link DataFilterPruner#json} for each simple filter, here with AND, OR and NOT
 * kept whole: a delete needs the predicate exactly, never a weaker one), to {@link Planner#delete},
 * which finds the matching rows' keys with the library and deletes them by key, one commit. A
 * predicate with no such form is refused by name before anything is written.
 */
final class DeleteWhere {
  private DeleteWhere() {
  }

  /** Spark's V2 predicates as simple filters; fails naming the first that has none. */
  static Filter[] filters(Identifier ident, Predicate[] predicates) {
    Filter[] out = new Filter[predicates.length];
    for (int i = 0; i < predicates.length; i++) {
      Option<Filter> f = PredicateUtils.toV1(predicates[i]);
      if (f.isEmpty()) {
        throw refused(ident, predicates[i].toString());
      }
      out[i] = f.get();
    }
    return out;
  }

  /** The JSON array {@link Planner#delete} takes; fails naming a filter that has no exact JSON form. */
  static String json(Identifier ident, Filter[] filters) {
    ArrayNode out = SparkCatalog.JSON.createArrayNode();
    for (Filter f : filters) {
      out.add(exact(ident, f));
    }
    try {
      return SparkCatalog.JSON.writeValueAsString(out);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  static void delete(String catalog, Identifier ident, Filter[] filters) {
    SparkCatalog.parse(SparkCatalog.planner().delete(catalog, ident.namespace()[0], ident.name(), json(ident, filters)));
  }

  private static JsonNode exact(Identifier ident, Filter f) {
    ObjectNode out = SparkCatalog.JSON.createObjectNode();
    out.put("op", f.getClass().getSimpleName());
    if (f instanceof AlwaysTrue || f instanceof AlwaysFalse) {
      return out;
    }
    if (f instanceof And a) {
      out.putArray("children").add(exact(ident, a.left())).add(exact(ident, a.right()));
      return out;
    }
    if (f instanceof Or o) {
      out.putArray("children").add(exact(ident, o.left())).add(exact(ident, o.right()));
      return out;
    }
    if (f instanceof Not n) {
      out.set("child", exact(ident, n.child()));
      return out;
    }
    JsonNode leaf = DataFilterPruner.json(f);
    if (leaf == null) {
      throw refused(ident, f.toString());
    }
    return leaf;
  }

  private static UnsupportedOperationException refused(Identifier ident, String predicate) {
    return new UnsupportedOperationException("lakeformat: DELETE FROM " + ident + " WHERE " + predicate
        + " is not supported: the predicate has no exact lakeformat form (comparisons, IN, IS NULL of"
        + " columns with literals, combined with AND, OR, NOT)");
  }
}
