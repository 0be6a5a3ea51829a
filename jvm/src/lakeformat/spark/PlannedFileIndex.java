package lakeformat.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.datasources.NoopCache$;
import org.apache.spark.sql.execution.datasources.PartitionPath;
import org.apache.spark.sql.execution.datasources.PartitionSpec;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.types.StructType;

import scala.Option;
import scala.collection.immutable.Seq;
import scala.collection.mutable.LinkedHashMap;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The files lakeformat planned, as Spark's file index: no listing and no file status calls (sizes
 * come from the manifests). Each bucket directory is a partition path with its partition's values,
 * so Spark prunes partitions itself ({@code PartitionFilters} in {@code explain()}); with a
 * {@link DataFilterPruner}, lakeformat prunes files by the scan's data filters and its statistics.
 */
public final class PlannedFileIndex extends PartitioningAwareFileIndex {
  private final PartitionSpec spec;
  private final LinkedHashMap<Path, FileStatus> leaves = new LinkedHashMap<>();
  private final scala.collection.immutable.Map<Path, FileStatus[]> byDir;
  private final Seq<Path> roots;
  private final Function<Seq<Expression>, Set<String>> pruner;
  private final Map<Seq<Expression>, Set<String>> pruned = new java.util.concurrent.ConcurrentHashMap<>();

  /** {@code files}: path, size and the bucket directory's partition values (a row of {@code partitionSchema}). */
  public PlannedFileIndex(SparkSession spark, StructType partitionSchema, List<PlannedFile> files) {
    this(spark, partitionSchema, files, null);
  }

  /** With {@code pruner}: the paths of the files a scan's data filters may match (null: all). */
  public PlannedFileIndex(SparkSession spark, StructType partitionSchema, List<PlannedFile> files,
                          Function<Seq<Expression>, Set<String>> pruner) {
    super(spark, scala.collection.immutable.Map$.MODULE$.empty(), Option.empty(), NoopCache$.MODULE$);
    Map<Path, List<FileStatus>> dirs = new java.util.LinkedHashMap<>();
    Map<Path, InternalRow> values = new HashMap<>();
    for (PlannedFile f : files) {
      Path p = new Path(f.path());
      FileStatus status = new FileStatus(f.size(), false, 1, 0, 0, p);
      leaves.put(p, status);
      dirs.computeIfAbsent(p.getParent(), d -> new ArrayList<>()).add(status);
      values.put(p.getParent(), f.partition());
    }
    Map<Path, FileStatus[]> arrays = new HashMap<>();
    List<PartitionPath> partitions = new ArrayList<>();
    for (Map.Entry<Path, List<FileStatus>> e : dirs.entrySet()) {
      arrays.put(e.getKey(), e.getValue().toArray(new FileStatus[0]));
      partitions.add(new PartitionPath(values.get(e.getKey()), e.getKey()));
    }
    byDir = scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(arrays));
    roots = CollectionConverters.asScala(new ArrayList<>(dirs.keySet())).toList();
    spec = new PartitionSpec(partitionSchema, CollectionConverters.asScala(partitions).toList());
    this.pruner = pruner;
  }

  /**
   * Spark's partition pruning, then lakeformat's file pruning by the data filters: files whose
   * statistics exclude them are not listed (asked once per set of filters).
   */
  @Override
  public Seq<PartitionDirectory> listFiles(Seq<Expression> partitionFilters, Seq<Expression> dataFilters) {
    Seq<PartitionDirectory> listed = super.listFiles(partitionFilters, dataFilters);
    if (pruner == null || dataFilters.isEmpty()) {
      return listed;
    }
    Set<String> keep = pruned.computeIfAbsent(dataFilters, pruner);
    if (keep == null) {
      return listed;
    }
    List<PartitionDirectory> out = new ArrayList<>();
    for (PartitionDirectory d : CollectionConverters.asJava(listed)) {
      List<FileStatusWithMetadata> files = new ArrayList<>();
      for (FileStatusWithMetadata f : CollectionConverters.asJava(d.files())) {
        if (keep.contains(f.getPath().toString())) {
          files.add(f);
        }
      }
      if (!files.isEmpty()) {
        out.add(new PartitionDirectory(d.values(), CollectionConverters.asScala(files).toList()));
      }
    }
    return CollectionConverters.asScala(out).toList();
  }

  /** A planned data file: its Hadoop path, its size in bytes, its partition's values. */
  public record PlannedFile(String path, long size, InternalRow partition) {
  }

  @Override
  public PartitionSpec partitionSpec() {
    return spec;
  }

  @Override
  public LinkedHashMap<Path, FileStatus> leafFiles() {
    return leaves;
  }

  @Override
  public scala.collection.immutable.Map<Path, FileStatus[]> leafDirToChildrenFiles() {
    return byDir;
  }

  @Override
  public Seq<Path> rootPaths() {
    return roots;
  }

  /** The plan is fixed: a table read again is planned again, by a new scan. */
  @Override
  public void refresh() {
  }
}
