package lakeformat.spark;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.NoSuchElementException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;

import scala.Function1;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

/**
 * Spark's Parquet reader over data files with deletion vectors, dropping the deleted rows as it
 * reads: a row's position is its count from the start of its file, looked up in the file's bitmap.
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
 * rows than its bitmap covers fails the read.
 */
public class DeletionVectorParquet extends ParquetFileFormat {
  private static final long serialVersionUID = 1L;
  public static final String VECTORS = "lakeformat.deletion-vectors";

  /** What {@code explain()} shows as the scan's format: Spark's own filters stay above the scan. */
  @Override
  public String toString() {
    return "Parquet, deleted rows dropped by lakeformat (no filter pushed into the reader)";
  }

  @Override
  public boolean supportBatch(SparkSession spark, StructType schema) {
    return false;
  }

  @Override
  public boolean isSplitable(SparkSession spark, scala.collection.immutable.Map<String, String> options, Path path) {
    return false;
  }

  @Override
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
      SparkSession spark, StructType dataSchema, StructType partitionSchema, StructType requiredSchema,
      Seq<Filter> filters, scala.collection.immutable.Map<String, String> options, Configuration hadoopConf) {
    if (options.get(VECTORS).isEmpty()) {
      throw new IllegalArgumentException(getClass().getName() + " needs the read option " + VECTORS);
    }
    Map<String, Vector> vectors = decode(options.get(VECTORS).get());
    Seq<Filter> none = scala.collection.immutable.List$.MODULE$.empty();
    return new Reader(super.buildReaderWithPartitionValues(spark, dataSchema, partitionSchema, requiredSchema, none,
                                                           options, hadoopConf), vectors);
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

    Reader(Function1<PartitionedFile, Iterator<InternalRow>> files, Map<String, Vector> vectors) {
      this.files = files;
      this.vectors = vectors;
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
      return new Kept(files.apply(file), v.words(), file.toPath().toString());
    }
  }

  /** The rows whose position's bit is clear. */
  private static final class Kept extends AbstractIterator<InternalRow> {
    private final Iterator<InternalRow> rows;
    private final long[] words;
    private final String path;
    private long position;
    private InternalRow ready;

    Kept(Iterator<InternalRow> rows, long[] words, String path) {
      this.rows = rows;
      this.words = words;
      this.path = path;
    }

    @Override
    public boolean hasNext() {
      while (ready == null && rows.hasNext()) {
        InternalRow row = rows.next();
        long p = position++;
        if ((p >>> 6) >= words.length) {
          throw new IllegalStateException("lakeformat: " + path + " has more rows than its manifest records");
        }
        if (((words[(int) (p >>> 6)] >>> (p & 63)) & 1L) == 0) {
          ready = row;
        }
      }
      return ready != null;
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      InternalRow row = ready;
      ready = null;
      return row;
    }
  }
}
