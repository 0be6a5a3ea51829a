package lakeformat.spark;

import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.V1Write;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read/readStream/write.format("lakeformat")} in a session that has lakeformat's jar
 * (found through META-INF/services; without the jar the name is the Python data source's).
 *
 * <ul>
 *   <li>A batch read the SQL catalog reads natively ({@link SourceResolver#resolve} says so: a
 *   table named by {@code table} + {@code warehouse}, a snapshot whose files Spark reads by name
 *   with no merge) is a {@link LakeformatTable}: Spark's Parquet scan over the files the Python
 *   planner lists, the same Planner calls as {@code SELECT ... FROM lf.db.t}.</li>
 *   <li>Every other read (sections that need lakeformat's merge-on-read, files of older schemas,
 *   incremental and changelog reads, path-named tables, a user-given schema) and every stream is
 *   the Python data source, registered as {@value #PYTHON_SOURCE}, through Spark's own JVM side of
 *   Python data sources ({@link PythonDataSourceV2}): the same rows as a session without the jar.</li>
 *   <li>{@code df.write} goes to {@code lakeformat.spark.write} on the driver (its native write where
 *   the table allows it), one commit per save.</li>
 * </ul>
 *
 * <p>The SQL catalog's {@link LakeformatTable} reads what needs the merge through the same Python
 * data source ({@link #pythonScan}).
 *
 * <p>Spark asks a provider for a table the same way for a batch read and for a stream, and the
 * scan Spark's Parquet builder builds cannot be a stream: a stream is told apart by who asks
 * (Spark's {@code DataStreamReader}/{@code DataStreamWriter} on the stack).
 */
public final class LakeformatSource implements TableProvider, DataSourceRegister {
  /** The name the Python data source is registered under in a session with this jar. */
  public static final String PYTHON_SOURCE = "lakeformat_python";
  private static volatile SourceResolver resolver;
  private PythonDataSourceV2 python;
  private StructType inferred;     // what inferSchema answered: getTable gets it back when no schema was given
  private JsonNode nativeRead;     // the resolver's answer when Spark's Parquet scan reads it

  /** Called by {@code lakeformat.spark.register(spark)} with the Python library's resolver. */
  public static void install(SourceResolver r) {
    resolver = r;
  }

  static SourceResolver resolver() {
    SourceResolver r = resolver;
    if (r == null) {
      throw new IllegalStateException("format(\"lakeformat\") has no resolver in this session: call "
          + "lakeformat.spark.register(spark) in the driver's Python process (PySpark) first");
    }
    return r;
  }

  @Override
  public String shortName() {
    return "lakeformat";
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;   // a reader's schema and a writer's DataFrame schema reach getTable
  }

  private PythonDataSourceV2 python() {
    if (python == null) {
      python = new PythonDataSourceV2();
      python.setShortName(PYTHON_SOURCE);
    }
    return python;
  }

  private static boolean streaming() {
    return StackWalker.getInstance().walk(frames -> frames.anyMatch(f -> f.getClassName().startsWith(
        "org.apache.spark.sql.") && (f.getClassName().endsWith(".DataStreamReader")
        || f.getClassName().endsWith(".DataStreamWriter"))));
  }

  static String json(Map<String, String> options) {
    try {
      return SparkCatalog.JSON.writeValueAsString(options);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    if (!streaming()) {
      JsonNode answer = SparkCatalog.parse(resolver().resolve(json(options.asCaseSensitiveMap())));
      if (answer.get("native").asBoolean()) {
        nativeRead = answer;
        inferred = (StructType) DataType.fromJson(answer.get("table").get("schema").toString());
        return inferred;
      }
    }
    inferred = python().inferSchema(options);
    return inferred;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    if (schema == inferred && nativeRead != null) {
      Identifier ident = Identifier.of(new String[] {nativeRead.get("database").asText()},
                                       nativeRead.get("name").asText());
      return new LakeformatTable(nativeRead.get("catalog").asText(), ident, nativeRead.get("table"));
    }
    Table table = python().getTable(schema, partitioning, properties);
    if (schema == inferred || streaming()) {
      return table;
    }
    return new Given(table, properties);
  }

  /**
   * The Python data source's scan of a catalog table at {@code snapshot}: the read the SQL catalog
   * hands to lakeformat's merge-on-read (the planner answered {@code NotNativeError}). The catalog's
   * options name the table as the data source's options do.
   */
  static ScanBuilder pythonScan(String catalog, Identifier ident, long snapshot, StructType schema) {
    Map<String, String> options = new HashMap<>();
    SparkCatalog.parse(catalog).properties().forEach(e -> options.put(e.getKey(), e.getValue().asText()));
    options.put("table", ident.namespace()[0] + "." + ident.name());
    options.put("snapshot-id", Long.toString(snapshot));
    PythonDataSourceV2 source = new PythonDataSourceV2();
    source.setShortName(PYTHON_SOURCE);
    Table table = source.getTable(schema, new Transform[0], options);
    return ((SupportsRead) table).newScanBuilder(new CaseInsensitiveStringMap(options));
  }

  /** Whether the planner's answer is that the read needs lakeformat's merge (or casts), not an error. */
  static boolean needsPython(String answer) {
    try {
      JsonNode node = SparkCatalog.JSON.readTree(answer);
      return node.isObject() && node.has("error") && "NotNativeError".equals(node.get("kind").asText());
    } catch (JsonProcessingException e) {
      return false;   // parse names it
    }
  }

  /**
   * A table with a schema given by the reader ({@code spark.read.schema(...)}: the Python data
   * source reads those columns) or by the DataFrame a batch write writes, which goes to
   * {@code lakeformat.spark.write} (it matches columns by name and casts, and creates a missing table).
   */
  static final class Given implements SupportsRead, SupportsWrite {
    private final Table python;
    private final Map<String, String> options;

    Given(Table python, Map<String, String> options) {
      this.python = python;
      this.options = options;
    }

    @Override
    public String name() {
      return "lakeformat " + options.getOrDefault("table", options.getOrDefault("path", ""));
    }

    @Override
    public Column[] columns() {
      return python.columns();
    }

    @Override
    @SuppressWarnings("deprecation")   // Table.schema is still what Spark's older paths ask
    public StructType schema() {
      return python.schema();
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.V1_BATCH_WRITE,
                        TableCapability.TRUNCATE, TableCapability.ACCEPT_ANY_SCHEMA);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap opts) {
      return ((SupportsRead) python).newScanBuilder(opts);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      String opts = json(info.options().asCaseSensitiveMap());
      return new Writing(opts);
    }
  }

  /** {@code mode("append")}, or {@code mode("overwrite")} (Spark truncates): lakeformat's overwrite. */
  private static final class Writing implements WriteBuilder, SupportsTruncate {
    private final String options;
    private boolean overwrite;

    Writing(String options) {
      this.options = options;
    }

    @Override
    public WriteBuilder truncate() {
      overwrite = true;
      return this;
    }

    @Override
    public Write build() {
      boolean replace = overwrite;
      return (V1Write) () -> (data, ignored) -> SparkCatalog.parse(resolver().write(options, data, replace));
    }
  }
}
