package lakeformat.spark;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;

import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Spark's Parquet writer for a table partitioned by columns the files keep (Paimon's layout): each
 * task writes its rows into one file per partition value itself, next to the file Spark asked
 * for, in the same task directory (so Spark's commit protocol commits or discards them with it).
 *
 * <p>Spark's own partitioned write either sorts a task's rows by partition or keeps a file per
 * partition and projects every row twice (its partition values, and the row without them); both
 * cost about half of an unpartitioned write again. Here a row is compared with the last row's
 * partition values, read in place with the column's own getter, and goes to the open file of its
 * partition (found among the open files by the same comparison, most recently used first). The files are the ones Spark's Parquet writer writes; the driver reads each file's
 * partition from its first row.
 *
 * <p>Write options: {@code lakeformat.partition.ordinals}, the partition columns' positions in the
 * written schema, comma-separated; {@code lakeformat.partition.max-open-files}, how many files a
 * task keeps open (the least recently used is closed beyond that, and its partition's next rows
 * start a new file).
 */
public class PartitionRoutingParquet extends ParquetFileFormat {
  private static final long serialVersionUID = 1L;
  public static final String ORDINALS = "lakeformat.partition.ordinals";
  public static final String MAX_OPEN_FILES = "lakeformat.partition.max-open-files";

  @Override
  public OutputWriterFactory prepareWrite(SparkSession spark, Job job,
                                          scala.collection.immutable.Map<String, String> options,
                                          StructType dataSchema) {
    OutputWriterFactory files = super.prepareWrite(spark, job, options, dataSchema);
    if (options.get(ORDINALS).isEmpty() || options.get(MAX_OPEN_FILES).isEmpty()) {
      throw new IllegalArgumentException(getClass().getName() + " needs the write options " + ORDINALS
          + " and " + MAX_OPEN_FILES);
    }
    int[] ordinals = Arrays.stream(options.get(ORDINALS).get().split(","))
        .mapToInt(Integer::parseInt).toArray();
    for (int o : ordinals) {
      if (o < 0 || o >= dataSchema.size()) {
        throw new IllegalArgumentException(ORDINALS + ": no column " + o + " in " + dataSchema.simpleString());
      }
    }
    int maxOpen = Integer.parseInt(options.get(MAX_OPEN_FILES).get());
    if (maxOpen < 1) {
      throw new IllegalArgumentException(MAX_OPEN_FILES + " must be at least 1");
    }
    return new Factory(files, ordinals, maxOpen);
  }

  private static final class Factory extends OutputWriterFactory {
    private static final long serialVersionUID = 1L;
    private final OutputWriterFactory files;
    private final int[] ordinals;
    private final int maxOpen;

    Factory(OutputWriterFactory files, int[] ordinals, int maxOpen) {
      this.files = files;
      this.ordinals = ordinals;
      this.maxOpen = maxOpen;
    }

    @Override
    public String getFileExtension(TaskAttemptContext context) {
      return files.getFileExtension(context);
    }

    @Override
    public OutputWriter newInstance(String path, StructType dataSchema, TaskAttemptContext context) {
      return new Router(files, path, dataSchema, context, ordinals, maxOpen);
    }
  }

  /** Whether a row's value of a partition column is {@code value}, read in place. */
  private interface Same {
    boolean test(InternalRow row, int ordinal, Object value);
  }

  /** The value, owning its bytes (a row's string or binary points into a buffer Spark reuses). */
  private interface Copy {
    Object apply(InternalRow row, int ordinal);
  }

  /** One partition column: its value compared, and copied out of the row. */
  private record Key(Same same, Copy copy) {
  }

  private static Key keyOf(DataType t) {
    if (t instanceof StringType) {
      return new Key((r, o, v) -> r.getUTF8String(o).equals(v), (r, o) -> r.getUTF8String(o).clone());
    }
    if (t instanceof IntegerType || t instanceof DateType) {
      return new Key((r, o, v) -> r.getInt(o) == (Integer) v, InternalRow::getInt);
    }
    if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) {
      return new Key((r, o, v) -> r.getLong(o) == (Long) v, InternalRow::getLong);
    }
    if (t instanceof ShortType) {
      return new Key((r, o, v) -> r.getShort(o) == (Short) v, InternalRow::getShort);
    }
    if (t instanceof ByteType) {
      return new Key((r, o, v) -> r.getByte(o) == (Byte) v, InternalRow::getByte);
    }
    if (t instanceof BooleanType) {
      return new Key((r, o, v) -> r.getBoolean(o) == (Boolean) v, InternalRow::getBoolean);
    }
    // floating point by bits: -0.0 and 0.0, or two NaNs, at worst go to two files, never one
    if (t instanceof FloatType) {
      return new Key((r, o, v) -> Float.floatToRawIntBits(r.getFloat(o)) == (Integer) v,
                 (r, o) -> Float.floatToRawIntBits(r.getFloat(o)));
    }
    if (t instanceof DoubleType) {
      return new Key((r, o, v) -> Double.doubleToRawLongBits(r.getDouble(o)) == (Long) v,
                 (r, o) -> Double.doubleToRawLongBits(r.getDouble(o)));
    }
    if (t instanceof BinaryType) {
      return new Key((r, o, v) -> ByteBuffer.wrap(r.getBinary(o)).equals(v),
                 (r, o) -> ByteBuffer.wrap(r.getBinary(o).clone()));
    }
    if (t instanceof DecimalType d) {
      return new Key((r, o, v) -> r.getDecimal(o, d.precision(), d.scale()).equals(v),
                 (r, o) -> r.getDecimal(o, d.precision(), d.scale()).clone());
    }
    throw new IllegalArgumentException("a partition column of type " + t.simpleString() + " is not supported");
  }

  /** A partition's values and its open file. */
  private record Slot(Object[] values, OutputWriter writer) {
  }

  private static final class Router extends OutputWriter {
    private final OutputWriterFactory files;
    private final String path;
    private final StructType schema;
    private final TaskAttemptContext context;
    private final int[] ordinals;
    private final Key[] keys;
    private final int maxOpen;
    // the open files, most recently switched to first: rows of a few partitions interleaved find
    // theirs in a comparison or two, with no allocation and no hashing
    private final ArrayList<Slot> open = new ArrayList<>();
    private Slot current;
    private int opened;

    Router(OutputWriterFactory files, String path, StructType schema, TaskAttemptContext context,
           int[] ordinals, int maxOpen) {
      this.files = files;
      this.path = path;
      this.schema = schema;
      this.context = context;
      this.ordinals = ordinals;
      this.maxOpen = maxOpen;
      this.keys = new Key[ordinals.length];
      for (int i = 0; i < ordinals.length; i++) {
        keys[i] = keyOf(schema.fields()[ordinals[i]].dataType());
      }
    }

    private boolean in(Slot slot, InternalRow row) {
      Object[] values = slot.values();
      for (int i = 0; i < ordinals.length; i++) {
        int o = ordinals[i];
        Object v = values[i];
        if (row.isNullAt(o) ? v != null : v == null || !keys[i].same().test(row, o, v)) {
          return false;
        }
      }
      return true;
    }

    private Slot slotOf(InternalRow row) {
      for (int i = 0; i < open.size(); i++) {
        Slot s = open.get(i);
        if (in(s, row)) {
          if (i > 0) {
            open.remove(i);
            open.add(0, s);
          }
          return s;
        }
      }
      if (open.size() >= maxOpen) {   // its partition's next rows start a new file
        open.remove(open.size() - 1).writer().close();
      }
      Object[] values = new Object[ordinals.length];
      for (int i = 0; i < ordinals.length; i++) {
        values[i] = row.isNullAt(ordinals[i]) ? null : keys[i].copy().apply(row, ordinals[i]);
      }
      Slot s = new Slot(values, files.newInstance(opened == 0 ? path : sibling(opened), schema, context));
      opened++;
      open.add(0, s);
      return s;
    }

    @Override
    public void write(InternalRow row) {
      if (current == null || !in(current, row)) {
        current = slotOf(row);
      }
      current.writer().write(row);
    }

    /** The n-th file of this task: Spark's file name with a prefix, in the same directory. */
    private String sibling(int n) {
      int slash = path.lastIndexOf('/');
      return path.substring(0, slash + 1) + "p" + n + "-" + path.substring(slash + 1);
    }

    @Override
    public void close() {
      RuntimeException failure = null;
      for (Slot s : open) {
        try {
          s.writer().close();
        } catch (RuntimeException e) {
          if (failure == null) {
            failure = e;
          } else {
            failure.addSuppressed(e);
          }
        }
      }
      open.clear();
      current = null;
      if (failure != null) {
        throw failure;
      }
    }

    @Override
    public String path() {
      return path;
    }
  }
}
