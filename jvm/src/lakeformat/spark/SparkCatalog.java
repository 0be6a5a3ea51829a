package lakeformat.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.connector.catalog.CatalogV2Util;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.expressions.IdentityTransform;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * lakeformat tables in Spark SQL, configured as Paimon's Spark connector is:
 *
 * <pre>
 *   spark.sql.catalog.lf = lakeformat.spark.SparkCatalog
 *   spark.sql.catalog.lf.warehouse = /path/to/warehouse
 * </pre>
 *
 * <p>Databases are namespaces of one level ({@code lf.db.t}). Everything about a table (its
 * schema, its snapshots, which files a read needs) comes from the Python library through the
 * {@link Planner} that {@code lakeformat.spark.register(spark)} installs on the driver; this
 * class decides nothing about the format. Reads are Spark's own Parquet scan ({@link LakeformatTable}).
 * {@code CREATE TABLE}, {@code INSERT INTO}, {@code INSERT OVERWRITE}, {@code ALTER TABLE} (columns and
 * table options), {@code RENAME TO}, {@code DROP TABLE} and creating and dropping databases go to the
 * library too; altering databases is refused for now.
 *
 * <p>Procedures ({@code CALL lf.sys.compact(table => 'db.t')}, ...) and system tables
 * ({@code lf.db.`t$snapshots`}, ...) are the library's too, named as in Paimon's connector
 * ({@link LakeformatProcedure}, {@link SystemTable}).
 */
public class SparkCatalog implements TableCatalog, SupportsNamespaces, ProcedureCatalog {
  static final ObjectMapper JSON = new ObjectMapper();
  private static volatile Planner planner;
  private String name;
  private String options;

  /** Called by {@code lakeformat.spark.register(spark)} with the Python library's planner. */
  public static void install(Planner p) {
    planner = p;
  }

  static Planner planner() {
    Planner p = planner;
    if (p == null) {
      throw new IllegalStateException("lakeformat's SparkCatalog has no planner in this session: call "
          + "lakeformat.spark.register(spark) in the driver's Python process (PySpark) before using a "
          + "lakeformat catalog; lakeformat plans every read in Python");
    }
    return p;
  }

  /** The planner's answer; an error it answered with (lakeformat's own, named) is thrown here. */
  static JsonNode parse(String json) {
    JsonNode answer;
    try {
      answer = JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("lakeformat: the planner answered with text that is not JSON: " + json, e);
    }
    if (answer.isObject() && answer.has("error")) {
      throw new IllegalStateException("lakeformat (" + answer.get("kind").asText() + "): " + answer.get("error").asText());
    }
    return answer;
  }

  @Override
  public void initialize(String catalogName, CaseInsensitiveStringMap conf) {
    name = catalogName;
    DynamicOverwrite.install(org.apache.spark.sql.SparkSession.active());
    if (conf.get("warehouse") == null || conf.get("warehouse").isEmpty()) {
      throw new IllegalArgumentException("lakeformat catalog " + catalogName + " needs spark.sql.catalog."
          + catalogName + ".warehouse");
    }
    Map<String, String> opts = new HashMap<>();
    for (Map.Entry<String, String> e : conf.entrySet()) {
      opts.put(e.getKey().toLowerCase(java.util.Locale.ROOT), e.getValue());
    }
    try {
      options = JSON.writeValueAsString(opts);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(e);
    }
  }

  @Override
  public String name() {
    return name;
  }

  private static String[] strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out.toArray(new String[0]);
  }

  private static String database(String[] namespace) throws NoSuchNamespaceException {
    if (namespace.length != 1) {
      throw new NoSuchNamespaceException(namespace);
    }
    return namespace[0];
  }

  // -- namespaces ---------------------------------------------------------------------------------

  @Override
  public String[][] listNamespaces() {
    String[] dbs = strings(parse(planner().namespaces(options)));
    String[][] out = new String[dbs.length][];
    for (int i = 0; i < dbs.length; i++) {
      out[i] = new String[] {dbs[i]};
    }
    return out;
  }

  @Override
  public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
    if (namespace.length == 0) {
      return listNamespaces();
    }
    if (!namespaceExists(namespace)) {
      throw new NoSuchNamespaceException(namespace);
    }
    return new String[0][];
  }

  @Override
  public boolean namespaceExists(String[] namespace) {
    if (namespace.length != 1) {
      return false;
    }
    for (String db : strings(parse(planner().namespaces(options)))) {
      if (db.equals(namespace[0])) {
        return true;
      }
    }
    return false;
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace) throws NoSuchNamespaceException {
    if (!namespaceExists(namespace)) {
      throw new NoSuchNamespaceException(namespace);
    }
    return new HashMap<>();
  }

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata) throws NamespaceAlreadyExistsException {
    if (namespace.length != 1) {
      throw new UnsupportedOperationException("lakeformat catalog " + name + ": a database is one name, not "
          + String.join(".", namespace));
    }
    if (namespaceExists(namespace)) {
      throw new NamespaceAlreadyExistsException(namespace);
    }
    parse(planner().createDatabase(options, namespace[0]));
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes) {
    throw refused("ALTER NAMESPACE");
  }

  /** {@code DROP DATABASE [CASCADE]}: a database with tables is dropped only with CASCADE. */
  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade)
      throws NoSuchNamespaceException, NonEmptyNamespaceException {
    if (!namespaceExists(namespace)) {
      throw new NoSuchNamespaceException(namespace);
    }
    if (!cascade && listTables(namespace).length > 0) {
      throw new NonEmptyNamespaceException(namespace);
    }
    return parse(planner().dropDatabase(options, namespace[0], cascade)).get("dropped").asBoolean();
  }

  // -- tables -------------------------------------------------------------------------------------

  @Override
  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    if (!namespaceExists(namespace)) {
      throw new NoSuchNamespaceException(namespace);
    }
    String[] names = strings(parse(planner().tables(options, database(namespace))));
    Identifier[] out = new Identifier[names.length];
    for (int i = 0; i < names.length; i++) {
      out[i] = Identifier.of(namespace, names[i]);
    }
    return out;
  }

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    return load(ident, "", -1);
  }

  @Override
  public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    return load(ident, version, -1);
  }

  /** {@code timestamp}: microseconds since the epoch (Spark's {@code TIMESTAMP AS OF}). */
  @Override
  public Table loadTable(Identifier ident, long timestamp) throws NoSuchTableException {
    return load(ident, "", Math.floorDiv(timestamp, 1000L));
  }

  private Table load(Identifier ident, String version, long millis) throws NoSuchTableException {
    if (ident.namespace().length != 1) {
      throw new NoSuchTableException(ident);
    }
    if (ident.name().contains("$")) {   // t$snapshots; t$branch_b is a table, below
      Table system = SystemTable.load(options, ident, version, millis);
      if (system != null) {
        return system;
      }
    }
    String answer = planner().table(options, ident.namespace()[0], ident.name(), version, millis);
    if (answer == null || answer.isEmpty()) {
      throw new NoSuchTableException(ident);
    }
    return new LakeformatTable(options, ident, parse(answer));
  }

  /**
   * {@code CREATE TABLE ... PARTITIONED BY (cols) TBLPROPERTIES ('primary-key' = 'a,b', 'bucket' = '2', ...)}:
   * created by the library; properties are table options (Spark's own, like {@code owner}, are not).
   */
  @Override
  @SuppressWarnings("deprecation")   // the one TableCatalog still requires
  public Table createTable(Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties)
      throws NoSuchNamespaceException {
    if (ident.namespace().length != 1) {
      throw new NoSuchNamespaceException(ident.namespace());
    }
    List<String> keys = new ArrayList<>();
    for (Transform t : partitions) {
      if (!(t instanceof IdentityTransform) || t.references().length != 1 || t.references()[0].fieldNames().length != 1) {
        throw new UnsupportedOperationException("lakeformat catalog " + name + ": PARTITIONED BY takes columns, not "
            + t.describe());
      }
      keys.add(t.references()[0].fieldNames()[0]);
    }
    Map<String, String> props = new HashMap<>(properties);
    for (String reserved : SPARK_PROPERTIES) {
      props.remove(reserved);
    }
    StructType schema = CatalogV2Util.v2ColumnsToStructType(columns);
    try {
      JsonNode answer = parse(planner().create(options, ident.namespace()[0], ident.name(), schema.json(),
                                               JSON.writeValueAsString(keys), JSON.writeValueAsString(props)));
      return new LakeformatTable(options, ident, answer);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(e);
    }
  }

  // properties Spark sets on a table itself, not table options
  private static final String[] SPARK_PROPERTIES = {TableCatalog.PROP_OWNER, TableCatalog.PROP_PROVIDER,
      TableCatalog.PROP_COMMENT, TableCatalog.PROP_LOCATION, TableCatalog.PROP_EXTERNAL,
      TableCatalog.PROP_IS_MANAGED_LOCATION};

  /**
   * {@code ALTER TABLE ADD/RENAME/DROP COLUMN, ALTER COLUMN ... TYPE, SET/UNSET TBLPROPERTIES}: one new
   * schema by the library's schema evolution ({@link TableChanges}); what it refuses, it names.
   */
  @Override
  public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
    Table table = loadTable(ident);
    parse(planner().alter(options, ident.namespace()[0], ident.name(), TableChanges.json(table.name(), changes)));
    return loadTable(ident);
  }

  @Override
  public boolean dropTable(Identifier ident) {
    if (ident.namespace().length != 1) {
      return false;
    }
    return parse(planner().dropTable(options, ident.namespace()[0], ident.name())).get("dropped").asBoolean();
  }

  /**
   * {@code ALTER TABLE c.db.t RENAME TO db2.u} (the new name within this catalog, as Spark and Paimon's
   * connector take it): the library's {@code Catalog.rename_table}.
   */
  @Override
  public void renameTable(Identifier oldIdent, Identifier newIdent) throws NoSuchTableException {
    if (newIdent.namespace().length != 1) {
      throw new UnsupportedOperationException("lakeformat catalog " + name + ": RENAME TO takes database.table "
          + "within this catalog, not " + newIdent);
    }
    loadTable(oldIdent);
    parse(planner().rename(options, oldIdent.namespace()[0], oldIdent.name(), newIdent.namespace()[0], newIdent.name()));
  }

  // -- procedures ---------------------------------------------------------------------------------

  /** {@code CALL <catalog>.sys.<name>(...)}: Paimon's procedure names, run by the library. */
  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    if (ident.namespace().length != 1 || !ident.namespace()[0].equals("sys")) {
      throw new UnsupportedOperationException("lakeformat catalog " + name + ": procedures are " + name
          + ".sys.<name>, not " + ident);
    }
    return LakeformatProcedure.load(options, ident.name());
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    String[] names = LakeformatProcedure.names();
    Identifier[] out = new Identifier[names.length];
    for (int i = 0; i < names.length; i++) {
      out[i] = Identifier.of(new String[] {"sys"}, names[i]);
    }
    return out;
  }

  private UnsupportedOperationException refused(String statement) {
    return new UnsupportedOperationException("lakeformat catalog " + name + ": " + statement
        + " is not supported yet; use the lakeformat library (lakeformat.Catalog)");
  }
}
