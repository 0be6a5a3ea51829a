package lakeformat.spark;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import scala.Function1;
import scala.Option;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * Spark's Parquet reader over data files with deletion vectors, marking each row it reads as
 * deleted or not in a last boolean column, {@value #DELETED}, which the query filters on (so the
 * rows stay in Spark's column batches, as Delta Lake applies its vectors): a row's position is its
 * count from the start of its file, looked up in the file's bitmap.
 *
 * <p>Counting is exact only while the reader returns every row of the file in order, so files are
 * not split and no filter is pushed into the reader (no row group is skipped); Spark applies the
 * query's filters to the rows that come out. What this saves against asking Spark for each row's
 * position ({@code _metadata.row_index}) and its file: the boxed position per row and the
 * metadata struct.
 *
 * <p>Read option {@code lakeformat.deletion-vectors}: for every file the scan reads, its name
 * (base64 of UTF-8), its size in bytes and its bitmap (base64 of little-endian 64-bit words, bit
 * {@code p & 63} of word {@code p >> 6} set for a deleted position {@code p}), separated by
 * spaces; files separated by {@code ;}. A file not named there, of another size, or with more
 * rows than its bitmap covers fails the read. The read schema ends with {@value #DELETED}
 * (boolean); the scan has no partition columns.
 */
public class DeletionVectorParquet extends ParquetFileFormat {
  private static final long serialVersionUID = 1L;
  public static final String VECTORS = "lakeformat.deletion-vectors";
  public static final String DELETED = "_lakeformat_deleted_row";

  /** What {@code explain()} shows as the scan's format: Spark's own filters stay above the scan. */
  @Override
  public String toString() {
    return "Parquet, deleted rows marked by lakeformat (no filter pushed into the reader)";
  }

  @Override
  public boolean isSplitable(SparkSession spark, scala.collection.immutable.Map<String, String> options, Path path) {
    return false;
  }

  /** Spark's vector classes for the data columns, and the on-heap vector this reader fills. */
  @Override
  public Option<Seq<String>> vectorTypes(StructType requiredSchema, StructType partitionSchema, SQLConf conf) {
    Option<Seq<String>> types = super.vectorTypes(requiredSchema, partitionSchema, conf);
    if (types.isEmpty() || !marked(requiredSchema)) {
      return types;
    }
    List<String> list = new ArrayList<>(CollectionConverters.asJava(types.get()));
    list.set(requiredSchema.length() - 1, OnHeapColumnVector.class.getName());
    return Option.apply(CollectionConverters.asScala(list).toList());
  }

  private static boolean marked(StructType schema) {
    int n = schema.length();
    return n > 0 && schema.fields()[n - 1].name().equals(DELETED)
        && schema.fields()[n - 1].dataType() instanceof BooleanType;
  }

  @Override
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
      SparkSession spark, StructType dataSchema, StructType partitionSchema, StructType requiredSchema,
      Seq<Filter> filters, scala.collection.immutable.Map<String, String> options, Configuration hadoopConf) {
    if (options.get(VECTORS).isEmpty() || !marked(requiredSchema) || partitionSchema.length() > 0) {
      throw new IllegalArgumentException(getClass().getName() + " needs the read option " + VECTORS
          + ", a read schema ending with the boolean column " + DELETED + " and no partition columns");
    }
    Map<String, Vector> vectors = decode(options.get(VECTORS).get());
    StructType data = new StructType(Arrays.copyOf(requiredSchema.fields(), requiredSchema.length() - 1));
    boolean batches = Boolean.parseBoolean(options.get(FileFormat.OPTION_RETURNING_BATCH()).getOrElse(() -> "false"));
    Seq<Filter> none = scala.collection.immutable.List$.MODULE$.empty();
    return new Reader(super.buildReaderWithPartitionValues(spark, dataSchema, partitionSchema, data, none,
                                                           options, hadoopConf), vectors, batches);
  }

  static Map<String, Vector> decode(String encoded) {
    Base64.Decoder b64 = Base64.getDecoder();
    Map<String, Vector> out = new HashMap<>();
    for (String file : encoded.split(";")) {
      String[] parts = file.split(" ");
      if (parts.length != 3) {
        throw new IllegalArgumentException(VECTORS + ": not name, size and bitmap: " + file);
      }
      String name = new String(b64.decode(parts[0]), StandardCharsets.UTF_8);
      ByteBuffer bytes = ByteBuffer.wrap(b64.decode(parts[2])).order(ByteOrder.LITTLE_ENDIAN);
      long[] words = new long[bytes.remaining() / 8];
      bytes.asLongBuffer().get(words);
      out.put(name, new Vector(Long.parseLong(parts[1]), words));
    }
    return out;
  }

  record Vector(long fileSize, long[] words) implements Serializable {
  }

  private static final class Reader extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>>
      implements Serializable {
    private static final long serialVersionUID = 1L;
    private final Function1<PartitionedFile, Iterator<InternalRow>> files;
    private final Map<String, Vector> vectors;
    private final boolean batches;

    Reader(Function1<PartitionedFile, Iterator<InternalRow>> files, Map<String, Vector> vectors, boolean batches) {
      this.files = files;
      this.vectors = vectors;
      this.batches = batches;
    }

    @Override
    public Iterator<InternalRow> apply(PartitionedFile file) {
      String name = file.toPath().getName();
      Vector v = vectors.get(name);
      if (v == null) {
        throw new IllegalStateException("lakeformat: no deletion vector was given for " + file.toPath());
      }
      if (file.fileSize() != v.fileSize()) {
        throw new IllegalStateException("lakeformat: a file read for its deletion vector is not the size its "
            + "manifest records (" + file.fileSize() + " bytes, not " + v.fileSize() + "): " + file.toPath());
      }
      if (file.start() != 0 || file.length() != file.fileSize()) {
        throw new IllegalStateException("lakeformat: a file with a deletion vector was split: " + file.toPath());
      }
      Positions positions = new Positions(v.words(), file.toPath().toString());
      Iterator<InternalRow> rows = files.apply(file);
      return batches ? asRows(asBatches(rows).map(positions::mark)) : rows.map(positions::mark);
    }

    // Spark's file readers return column batches as an Iterator[InternalRow] (erased): retyped
    // without a cast of the elements
    @SuppressWarnings("unchecked")
    private static Iterator<ColumnarBatch> asBatches(Iterator<InternalRow> rows) {
      return (Iterator<ColumnarBatch>) (Iterator<?>) rows;
    }

    @SuppressWarnings("unchecked")
    private static Iterator<InternalRow> asRows(Iterator<ColumnarBatch> batches) {
      return (Iterator<InternalRow>) (Iterator<?>) batches;
    }
  }

  /** A file's rows in the order the reader returns them, each marked deleted or not. */
  private static final class Positions {
    private static final InternalRow KEPT = new GenericInternalRow(new Object[] {false});
    private static final InternalRow GONE = new GenericInternalRow(new Object[] {true});
    private final long[] words;
    private final String path;
    private final JoinedRow joined = new JoinedRow();
    private OnHeapColumnVector marks;
    private int capacity;
    private long position;

    Positions(long[] words, String path) {
      this.words = words;
      this.path = path;
    }

    private boolean deleted(long p) {
      if ((p >>> 6) >= words.length) {
        throw new IllegalStateException("lakeformat: " + path + " has more rows than its manifest records");
      }
      return ((words[(int) (p >>> 6)] >>> (p & 63)) & 1L) != 0;
    }

    InternalRow mark(InternalRow row) {
      return joined.apply(row, deleted(position++) ? GONE : KEPT);
    }

    /** The batch with one more column: the marks of its rows (the batch's vectors are Spark's, reused). */
    ColumnarBatch mark(ColumnarBatch batch) {
      int n = batch.numRows();
      if (marks == null || capacity < n) {
        capacity = Math.max(n, 4096);
        marks = new OnHeapColumnVector(capacity, BooleanType$.MODULE$);
      }
      for (int i = 0; i < n; i++) {
        marks.putBoolean(i, deleted(position + i));
      }
      position += n;
      ColumnVector[] columns = new ColumnVector[batch.numCols() + 1];
      for (int i = 0; i < batch.numCols(); i++) {
        columns[i] = batch.column(i);
      }
      columns[columns.length - 1] = marks;
      return new ColumnarBatch(columns, n);
    }
  }
}
