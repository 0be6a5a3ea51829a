package lakeformat.spark;

import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A catalog read through the {@code lakeformat} Python data source: for tables Spark's own Parquet
 * reader cannot reach (an object store, where the session has no Hadoop connector for it), the
 * rows are read by lakeformat's reader in Spark's Python workers (pyarrow's S3 client, as the
 * library reads them), at the snapshot the catalog pinned. The storage options (credentials
 * included) go only into the data source's options, which Spark hands to the Python workers; they
 * are never part of a message.
 */
final class SourceScan {
  private SourceScan() {
  }

  /**
   * The data source's scan builder over the table the planner named: {@code source} holds the
   * data source options of the read ({@code table}, {@code snapshot-id}), {@code catalog} the
   * catalog's options as JSON (warehouse and storage options).
   */
  static ScanBuilder builder(String catalog, JsonNode source, StructType schema, CaseInsensitiveStringMap options) {
    Map<String, String> opts = new HashMap<>();
    try {
      opts.putAll(SparkCatalog.JSON.readValue(catalog, new TypeReference<Map<String, String>>() { }));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("lakeformat: the catalog's options are not a JSON object of strings");
    }
    source.properties().forEach(e -> opts.put(e.getKey(), e.getValue().asText()));
    opts.putAll(options.asCaseSensitiveMap());
    PythonDataSourceV2 ds = new PythonDataSourceV2();
    ds.setShortName(source.get("format").asText());
    opts.remove("format");
    CaseInsensitiveStringMap all = new CaseInsensitiveStringMap(opts);
    SupportsRead table = (SupportsRead) ds.getTable(schema, new Transform[0], all);
    return table.newScanBuilder(all);
  }
}
