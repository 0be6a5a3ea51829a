package lakeformat.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Dynamic partition overwrite of a lakeformat table as a V1 write. Spark runs a dynamic overwrite
 * only as a V2 batch write (no V1 fallback, unlike appends and overwrites by expression), whose
 * tasks would have to write lakeformat files on executors; lakeformat writes on the driver from a
 * DataFrame instead. After Spark built the write ({@link OverwriteWriteBuilder}, told "dynamic"),
 * this optimizer rule turns the command into an overwrite by expression carrying that same write,
 * which Spark runs through the V1 fallback: the write still replaces only the partitions written.
 */
final class DynamicOverwrite extends Rule<LogicalPlan> {
  private static final DynamicOverwrite RULE = new DynamicOverwrite();

  /** Adds the rule to the session's extra optimizations, once. */
  static void install(SparkSession spark) {
    List<Rule<LogicalPlan>> rules = new ArrayList<>(CollectionConverters.asJava(spark.experimental().extraOptimizations()));
    if (rules.stream().noneMatch(r -> r instanceof DynamicOverwrite)) {
      rules.add(RULE);
      spark.experimental().extraOptimizations_$eq(CollectionConverters.asScala(rules).toSeq());
    }
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (plan instanceof OverwritePartitionsDynamic o && o.write().isDefined()
        && o.table() instanceof DataSourceV2Relation r && r.table() instanceof LakeformatTable) {
      return new OverwriteByExpression(o.table(), Literal.TrueLiteral(), o.query(), o.writeOptions(), o.isByName(),
                                       o.withSchemaEvolution(), o.write(), Option.apply(o.query()));
    }
    return plan;
  }
}
