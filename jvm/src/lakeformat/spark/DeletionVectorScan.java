package lakeformat.spark;

import java.io.IOException;
import java.io.Serializable;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.FileSourceOptions;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.VariantExtraction;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.execution.datasources.v2.FilePartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScan;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Option;
import scala.collection.immutable.Seq;

/**
 * Spark's own Parquet scan (DataSource V2) over files with deletion vectors: each file is read
 * whole and in order, its rows counted, and a row whose position its vector sets is skipped (the
 * vectors in {@link DeletionVectorParquet}'s option format). Counting is exact only while every row
 * of a file comes out in order, so files are not split, no filter is pushed into the reader (no
 * row group skipped; Spark filters the rows above the scan) and no aggregate is answered from the
 * files' footers (which count deleted rows). Rows come out one by one (Spark's vectorised decoder
 * underneath): a column batch has no way to leave rows out.
 */
public final class DeletionVectorScan {
  private DeletionVectorScan() {
  }

  /** The scan builder: Spark's Parquet one, with nothing pushed into the reader. */
  public static final class Builder extends ParquetScanBuilder {
    private static final long serialVersionUID = 1L;
    private final String vectors;

    public Builder(SparkSession spark, PartitioningAwareFileIndex index, StructType schema, StructType dataSchema,
                   CaseInsensitiveStringMap options, String vectors) {
      super(spark, index, schema, dataSchema, options);
      this.vectors = vectors;
    }

    @Override
    public Filter[] pushDataFilters(Filter[] filters) {
      return new Filter[0];
    }

    @Override
    public boolean pushAggregation(Aggregation aggregation) {
      return false;
    }

    @Override
    public ParquetScan build() {
      ParquetScan s = super.build();
      return new ParquetWithDeletionVectorsScan(s.sparkSession(), s.hadoopConf(), s.fileIndex(), s.dataSchema(), s.readDataSchema(),
                      s.readPartitionSchema(), s.pushedFilters(), s.options(), s.pushedAggregate(),
                      s.partitionFilters(), s.dataFilters(), s.pushedVariantExtractions(), vectors);
    }
  }

  /** Spark's Parquet scan, files whole, rows through {@link Skipping} ({@code explain()} names it by its class). */
  public static final class ParquetWithDeletionVectorsScan extends ParquetScan {
    private static final long serialVersionUID = 1L;
    private final String vectors;

    ParquetWithDeletionVectorsScan(SparkSession spark, Configuration conf, PartitioningAwareFileIndex index, StructType dataSchema,
         StructType readDataSchema, StructType readPartitionSchema, Filter[] pushed, CaseInsensitiveStringMap options,
         Option<Aggregation> aggregate, Seq<Expression> partitionFilters, Seq<Expression> dataFilters,
         VariantExtraction[] variants, String vectors) {
      super(spark, conf, index, dataSchema, readDataSchema, readPartitionSchema, pushed, options, aggregate,
            partitionFilters, dataFilters, variants);
      if (pushed.length > 0 || aggregate.isDefined()) {
        throw new IllegalStateException("lakeformat: a filter or an aggregate was pushed into a scan with deletion vectors");
      }
      this.vectors = vectors;
    }

    @Override
    public boolean isSplitable(Path path) {
      return false;
    }

    @Override
    public String description() {
      return super.description() + ", DeletionVectors: rows skipped by lakeformat";
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      return new Skipping((FilePartitionReaderFactory) super.createReaderFactory(), vectors);
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof ParquetWithDeletionVectorsScan s && super.equals(other) && vectors.equals(s.vectors);
    }

    @Override
    public int hashCode() {
      return super.hashCode() * 31 + vectors.hashCode();
    }
  }

  /** Spark's Parquet readers, each file's rows counted and the deleted ones skipped. */
  static final class Skipping extends FilePartitionReaderFactory implements Serializable {
    private static final long serialVersionUID = 1L;
    private final FilePartitionReaderFactory files;
    private final String encoded;
    private transient Map<String, DeletionVectorParquet.Vector> vectors;

    Skipping(FilePartitionReaderFactory files, String encoded) {
      this.files = files;
      this.encoded = encoded;
    }

    @Override
    public FileSourceOptions options() {
      return files.options();
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return false;
    }

    @Override
    public PartitionReader<InternalRow> buildReader(PartitionedFile file) {
      if (vectors == null) {
        vectors = encoded.isEmpty() ? Map.of() : DeletionVectorParquet.decode(encoded);
      }
      PartitionReader<InternalRow> rows = files.buildReader(file);
      DeletionVectorParquet.Vector v = vectors.get(file.toPath().getName());
      if (v == null) {
        return rows;   // a file without deleted rows
      }
      if (file.fileSize() != v.fileSize()) {
        throw new IllegalStateException("lakeformat: a file read for its deletion vector is not the size its "
            + "manifest records (" + file.fileSize() + " bytes, not " + v.fileSize() + "): " + file.toPath());
      }
      if (file.start() != 0 || file.length() != file.fileSize()) {
        throw new IllegalStateException("lakeformat: a file with a deletion vector was split: " + file.toPath());
      }
      return new SkippingReader(rows, v.words(), file.toPath().toString());
    }
  }

  private static final class SkippingReader implements PartitionReader<InternalRow> {
    private final PartitionReader<InternalRow> rows;
    private final long[] words;
    private final String path;
    private long position;

    SkippingReader(PartitionReader<InternalRow> rows, long[] words, String path) {
      this.rows = rows;
      this.words = words;
      this.path = path;
    }

    @Override
    public boolean next() throws IOException {
      while (rows.next()) {
        long p = position++;
        if ((p >>> 6) >= words.length) {
          throw new IllegalStateException("lakeformat: " + path + " has more rows than its manifest records");
        }
        if (((words[(int) (p >>> 6)] >>> (p & 63)) & 1L) == 0) {
          return true;
        }
      }
      return false;
    }

    @Override
    public InternalRow get() {
      return rows.get();
    }

    @Override
    public void close() throws IOException {
      rows.close();
    }
  }
}
