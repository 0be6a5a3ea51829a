package lakeformat.spark;

import java.util.EnumSet;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A system table, {@code SELECT * FROM lf.db.`t$snapshots`} ({@code $files}, {@code $tags}, ...),
 * with Paimon's column names: its rows are the Python library's own system table
 * ({@code Table.system_table}), computed from metadata on the driver when the table is loaded
 * and read as a {@link LocalRows} scan (Spark filters and projects them).
 */
final class SystemTable implements SupportsRead {
  private final Identifier ident;
  private final LocalRows rows;

  private SystemTable(Identifier ident, LocalRows rows) {
    this.ident = ident;
    this.rows = rows;
  }

  /**
   * The system table {@code ident} names, or null when it names a table or a branch ({@code t$branch_b});
   * {@link NoSuchTableException} when the table of {@code t$snapshots} does not exist.
   */
  static SystemTable load(String catalog, Identifier ident, String version, long millis) throws NoSuchTableException {
    String answer = LakeformatProcedure.planner().systemTable(catalog, ident.namespace()[0], ident.name(), version,
                                                              millis);
    if (answer == null || answer.isEmpty()) {
      return null;
    }
    JsonNode rows = SparkCatalog.parse(answer);
    if (rows.path("missing").asBoolean(false)) {
      throw new NoSuchTableException(ident);
    }
    return new SystemTable(ident, new LocalRows(rows, "lakeformat system table " + ident.name()));
  }

  @Override
  public String name() {
    return ident.toString();
  }

  @Override
  @SuppressWarnings("deprecation")   // as LakeformatTable
  public StructType schema() {
    return rows.readSchema();
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return () -> rows;
  }
}
