package lakeformat.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.DeleteFromTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;

import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Lets Spark plan {@code DELETE FROM} on a lakeformat table whose Spark Parquet scan reads the
 * columns in another order than the table's (partition columns last, the table's elsewhere):
 * Spark's column pruning then puts a reordering {@code Project} over the scan, and Spark's own
 * DELETE planning accepts only the bare scan ("Unexpected table relation"). This strategy, first
 * in the session's planner, hands that DELETE back to Spark with the {@code Project} removed (it
 * only reorders the same attributes, which the condition names); Spark then plans it as it plans
 * any {@code SupportsDelete} table ({@link LakeformatTable#deleteWhere}).
 */
public final class DeleteStrategy extends SparkStrategy {
  /** Adds this strategy to the session's planner (once): {@code lakeformat.spark.register(spark)}. */
  public static void install(SparkSession session) {
    List<SparkStrategy> strategies = new ArrayList<>(CollectionConverters.asJava(session.experimental().extraStrategies()));
    if (strategies.stream().noneMatch(s -> s instanceof DeleteStrategy)) {
      strategies.add(0, new DeleteStrategy());
      session.experimental().extraStrategies_$eq(CollectionConverters.asScala(strategies).toList());
    }
  }

  @Override
  public Seq<SparkPlan> apply(LogicalPlan plan) {
    if (plan instanceof DeleteFromTable d && d.table() instanceof Project p
        && p.child() instanceof DataSourceV2ScanRelation s && s.relation().table() instanceof LakeformatTable
        && reorders(p)) {
      return CollectionConverters.asScala(List.of(planLater(new DeleteFromTable(s, d.condition())))).toList();
    }
    return CollectionConverters.asScala(List.<SparkPlan>of()).toList();
  }

  private static boolean reorders(Project p) {
    for (NamedExpression e : CollectionConverters.asJava(p.projectList())) {
      if (!(e instanceof Attribute)) {
        return false;
      }
    }
    return p.child().outputSet().equals(p.outputSet());
  }
}
