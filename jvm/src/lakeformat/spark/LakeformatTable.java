package lakeformat.spark;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsDelete;
import org.apache.spark.sql.connector.catalog.SupportsPartitionManagement;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TruncatableTable;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StringType$;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Option;

/**
 * A lakeformat table at one snapshot (pinned when the table is loaded, so a query's schema and its
 * files agree). A read asks the {@link Planner} for the snapshot's files and gives them to Spark's
 * own Parquet scan (DataSource V2): its vectorised reader, column pruning, filters pushed into row
 * groups, partition pruning by the planned partition values, file pruning by the data filters
 * and the files' statistics ({@link DataFilterPruner}); files with deletion vectors go
 * through {@link DeletionVectorScan}. A snapshot that needs lakeformat's merge-on-read, files
 * Spark cannot read as the table's columns, and tables Spark's reader cannot reach (object stores:
 * PySpark ships no Hadoop S3 connector) are read by the Python data source instead
 * ({@link LakeformatSource#pythonScan}). Writes ({@code INSERT INTO}, {@code INSERT OVERWRITE}) go to the
 * library through {@link OverwriteWriteBuilder}; {@code TRUNCATE TABLE} and the partition statements
 * ({@link Partitions}) too. {@code DELETE FROM ... WHERE} deletes the matching rows of a primary-key
 * table by key through the library ({@link DeleteWhere}).
 */
public class LakeformatTable implements SupportsRead, SupportsWrite, TruncatableTable, SupportsPartitionManagement,
                                        SupportsDelete {
  // as lakeformat's native read: Paimon's dates are proleptic Gregorian; a planned file that is
  // gone or corrupt fails the read; page checksums are verified
  private static final Map<String, String> SCAN_OPTIONS = Map.of(
      "datetimeRebaseMode", "CORRECTED", "int96RebaseMode", "CORRECTED",
      "ignoreCorruptFiles", "false", "ignoreMissingFiles", "false",
      "parquet.page.verify-checksum.enabled", "true");
  private final String catalog;
  private final Identifier ident;
  private final StructType schema;
  private final List<String> partitionKeys = new ArrayList<>();
  private final long snapshot;
  private final long schemaId;
  private final Map<String, String> properties = new HashMap<>();

  LakeformatTable(String catalog, Identifier ident, JsonNode meta) {
    this.catalog = catalog;
    this.ident = ident;
    this.schema = (StructType) DataType.fromJson(meta.get("schema").toString());
    meta.get("partitionKeys").forEach(n -> partitionKeys.add(n.asText()));
    this.snapshot = meta.get("snapshot").isNull() ? -1 : meta.get("snapshot").asLong();
    this.schemaId = meta.get("schemaId").asLong();
    meta.get("properties").properties().forEach(e -> properties.put(e.getKey(), e.getValue().asText()));
  }

  @Override
  public String name() {
    return ident.toString();
  }

  @Override
  @SuppressWarnings("deprecation")   // Spark's scan builders still take a StructType
  public StructType schema() {
    return schema;
  }

  @Override
  public Transform[] partitioning() {
    return partitionKeys.stream().map(Expressions::identity).toArray(Transform[]::new);
  }

  @Override
  public Map<String, String> properties() {
    return properties;
  }

  /** BATCH_WRITE: Spark's check for a dynamic overwrite asks for it; {@link DynamicOverwrite} runs it as V1. */
  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ, TableCapability.V1_BATCH_WRITE, TableCapability.BATCH_WRITE,
                      TableCapability.TRUNCATE,
                      TableCapability.OVERWRITE_BY_FILTER, TableCapability.OVERWRITE_DYNAMIC);
  }

  /**
   * {@code INSERT INTO} and {@code INSERT OVERWRITE} (static and dynamic): the rows reach the library
   * on the driver as a DataFrame, which lakeformat writes (its native write where the table allows
   * it) and commits once ({@link OverwriteWriteBuilder}).
   */
  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new OverwriteWriteBuilder(catalog, ident, partitionKeys);
  }

  // -- SHOW PARTITIONS, ALTER TABLE ... DROP PARTITION, TRUNCATE TABLE ... PARTITION: see Partitions --

  @Override
  public InternalRow[] listPartitionIdentifiers(String[] names, InternalRow ident) {
    return Partitions.list(catalog, this.ident, snapshot, partitionSchema(), names, ident);
  }

  @Override
  public boolean dropPartition(InternalRow partition) {
    return Partitions.drop(catalog, ident, partitionSchema(), partition);
  }

  @Override
  public boolean truncatePartition(InternalRow partition) {
    Partitions.drop(catalog, ident, partitionSchema(), partition);
    return true;
  }

  @Override
  public void createPartition(InternalRow partition, Map<String, String> metadata) {
    throw Partitions.refused(ident, "ADD PARTITION");
  }

  @Override
  public void replacePartitionMetadata(InternalRow partition, Map<String, String> metadata) {
    throw Partitions.refused(ident, "partition metadata");
  }

  @Override
  public Map<String, String> loadPartitionMetadata(InternalRow partition) {
    return Map.of();
  }

  /** {@code TRUNCATE TABLE}: the library's overwrite of the whole table with no rows, one commit. */
  @Override
  public boolean truncateTable() {
    SparkCatalog.parse(SparkCatalog.planner().truncate(catalog, ident.namespace()[0], ident.name()));
    return true;
  }

  /** {@code DELETE FROM}: a predicate with no exact lakeformat form is refused here, by name. */
  @Override
  public boolean canDeleteWhere(Predicate[] predicates) {
    return canDeleteWhere(DeleteWhere.filters(ident, predicates));
  }

  @Override
  public boolean canDeleteWhere(Filter[] filters) {
    DeleteWhere.json(ident, filters);
    return true;
  }

  /** {@code DELETE FROM ... [WHERE ...]}: the library deletes the matching rows by key, one commit. */
  @Override
  public void deleteWhere(Filter[] filters) {
    DeleteWhere.delete(catalog, ident, filters);
  }

  @Override
  public StructType partitionSchema() {
    List<StructField> fields = new ArrayList<>();
    for (String k : partitionKeys) {
      fields.add(schema.fields()[schema.fieldIndex(k)]);
    }
    return new StructType(fields.toArray(new StructField[0]));
  }

  private StructType dataSchema() {
    List<StructField> fields = new ArrayList<>();
    for (StructField f : schema.fields()) {
      if (!partitionKeys.contains(f.name())) {
        fields.add(f);
      }
    }
    return new StructType(fields.toArray(new StructField[0]));
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    SparkSession spark = SparkSession.active();
    StructType partitionSchema = partitionSchema();
    List<PlannedFileIndex.PlannedFile> files = new ArrayList<>();
    String vectors = "";
    if (snapshot >= 0) {
      String answer = SparkCatalog.planner().plan(catalog, ident.namespace()[0], ident.name(), snapshot, schemaId);
      if (LakeformatSource.needsPython(answer)) {
        return LakeformatSource.pythonScan(catalog, ident, snapshot, schema);   // lakeformat's reader
      }
      JsonNode plan = SparkCatalog.parse(answer);
      String zone = spark.sessionState().conf().sessionLocalTimeZone();
      for (JsonNode f : plan.get("files")) {
        files.add(new PlannedFileIndex.PlannedFile(f.get("path").asText(), f.get("size").asLong(),
                                                   partitionRow(partitionSchema, f.get("partition"), zone)));
      }
      vectors = plan.get("vectors").asText();
    }
    PlannedFileIndex index = new PlannedFileIndex(spark, partitionSchema, files,
        snapshot >= 0 ? new DataFilterPruner(catalog, ident, snapshot, schemaId) : null);
    Map<String, String> opts = new HashMap<>(options.asCaseSensitiveMap());
    opts.putAll(SCAN_OPTIONS);
    CaseInsensitiveStringMap scanOptions = new CaseInsensitiveStringMap(opts);
    if (vectors.isEmpty()) {
      return new ParquetScanBuilder(spark, index, schema, dataSchema(), scanOptions);
    }
    return new DeletionVectorScan.Builder(spark, index, schema, dataSchema(), scanOptions, vectors);
  }

  /** The partition's values (text, as in its directory name) as a row of Spark's values. */
  static InternalRow partitionRow(StructType partitionSchema, JsonNode values, String zone) {
    Object[] row = new Object[partitionSchema.length()];
    for (int i = 0; i < row.length; i++) {
      JsonNode v = values.get(i);
      if (v != null && !v.isNull()) {
        Literal text = Literal.create(v.asText(), StringType$.MODULE$);
        row[i] = new Cast(text, partitionSchema.fields()[i].dataType(), Option.apply(zone)).eval(null);
        if (row[i] == null) {
          throw new IllegalStateException("lakeformat: partition value " + v.asText() + " is not a "
              + partitionSchema.fields()[i].dataType().simpleString());
        }
      }
    }
    return new GenericInternalRow(row);
  }
}
