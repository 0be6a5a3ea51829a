package lakeformat.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * A lakeformat procedure, {@code CALL lf.sys.<name>(table => 'db.t', ...)}, as Paimon's Spark
 * connector names them (compact, expire_snapshots, create_tag, rollback, ...), through Spark's own
 * {@code ProcedureCatalog} (no session extension). Its parameters and its work are the Python
 * library's ({@link SystemPlanner}, lakeformat.spark.sql_system): this class passes the arguments
 * by name and hands back the rows it answers as a {@link LocalRows} scan.
 */
public final class LakeformatProcedure implements UnboundProcedure, BoundProcedure {
  private static volatile SystemPlanner planner;
  private final String catalog;
  private final String name;
  private final String description;
  private final ProcedureParameter[] parameters;

  /** Called by {@code lakeformat.spark.register(spark)} with the Python library's answers. */
  public static void install(SystemPlanner p) {
    planner = p;
  }

  static SystemPlanner planner() {
    SystemPlanner p = planner;
    if (p == null) {
      throw new IllegalStateException("lakeformat's procedures and system tables need "
          + "lakeformat.spark.register(spark) in the driver's Python process (PySpark) first");
    }
    return p;
  }

  private LakeformatProcedure(String catalog, String name, JsonNode spec) {
    this.catalog = catalog;
    this.name = name;
    this.description = spec.path("description").asText(name);
    List<ProcedureParameter> params = new ArrayList<>();
    for (JsonNode p : spec.get("parameters")) {
      ProcedureParameter.Builder b = ProcedureParameter.in(p.get("name").asText(),
                                                            DataType.fromJson(p.get("type").toString()));
      if (!p.get("required").asBoolean()) {
        b = b.defaultValue("NULL");
      }
      params.add(b.build());
    }
    this.parameters = params.toArray(new ProcedureParameter[0]);
  }

  /** The procedure {@code name} of the catalog with options {@code catalog}, or an error naming those there are. */
  static LakeformatProcedure load(String catalog, String name) {
    return new LakeformatProcedure(catalog, name, SparkCatalog.parse(planner().procedure(name)));
  }

  static String[] names() {
    List<String> out = new ArrayList<>();
    SparkCatalog.parse(planner().procedures()).forEach(n -> out.add(n.asText()));
    return out.toArray(new String[0]);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String description() {
    return description;
  }

  @Override
  public BoundProcedure bind(StructType inputType) {
    return this;   // one signature per procedure; Spark matches arguments to it by name or position
  }

  @Override
  public ProcedureParameter[] parameters() {
    return parameters;
  }

  @Override
  public boolean isDeterministic() {
    return false;   // changes the table
  }

  @Override
  public Iterator<Scan> call(InternalRow input) {
    Map<String, Object> args = new LinkedHashMap<>();
    for (int i = 0; i < parameters.length; i++) {
      if (!input.isNullAt(i)) {
        args.put(parameters[i].name(), LocalRows.argument(input.get(i, parameters[i].dataType())));
      }
    }
    String json;
    try {
      json = SparkCatalog.JSON.writeValueAsString(args);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(e);
    }
    JsonNode answer = SparkCatalog.parse(planner().call(catalog, name, json));
    return Collections.<Scan>singletonList(new LocalRows(answer, "lakeformat procedure " + name)).iterator();
  }
}
