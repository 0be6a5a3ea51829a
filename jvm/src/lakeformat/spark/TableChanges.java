package lakeformat.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.spark.sql.connector.catalog.TableChange;

/**
 * {@code ALTER TABLE}'s changes as the JSON the {@link Planner} applies with the library's schema
 * evolution ({@code Table.alter}): add, rename and drop a top-level column, change its type, set and
 * remove table options. What the library has no change for (nested columns, column positions,
 * defaults, nullability, comments of existing columns) is refused here, by name.
 */
final class TableChanges {
  private TableChanges() {
  }

  static String json(String table, TableChange[] changes) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (TableChange c : changes) {
      Map<String, Object> m = new LinkedHashMap<>();
      if (c instanceof TableChange.AddColumn a) {
        m.put("op", "add");
        m.put("name", column(table, a.fieldNames(), c));
        m.put("type", a.dataType().json());
        m.put("nullable", a.isNullable());
        m.put("comment", a.comment());
        if (a.position() != null) {
          throw refused(table, c, "column positions (FIRST, AFTER)");
        }
        if (a.defaultValue() != null) {
          throw refused(table, c, "column defaults");
        }
      } else if (c instanceof TableChange.RenameColumn r) {
        m.put("op", "rename");
        m.put("name", column(table, r.fieldNames(), c));
        m.put("newName", r.newName());
      } else if (c instanceof TableChange.DeleteColumn d) {
        m.put("op", "drop");
        m.put("name", column(table, d.fieldNames(), c));
        m.put("ifExists", Boolean.TRUE.equals(d.ifExists()));
      } else if (c instanceof TableChange.UpdateColumnType u) {
        m.put("op", "type");
        m.put("name", column(table, u.fieldNames(), c));
        m.put("type", u.newDataType().json());
      } else if (c instanceof TableChange.SetProperty s) {
        m.put("op", "set");
        m.put("key", s.property());
        m.put("value", s.value());
      } else if (c instanceof TableChange.RemoveProperty r) {
        m.put("op", "unset");
        m.put("key", r.property());
      } else {
        throw refused(table, c, "this change");
      }
      out.add(m);
    }
    try {
      return SparkCatalog.JSON.writeValueAsString(out);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(e);
    }
  }

  private static String column(String table, String[] names, TableChange c) {
    if (names.length != 1) {
      throw refused(table, c, "nested columns");
    }
    return names[0];
  }

  private static UnsupportedOperationException refused(String table, TableChange c, String what) {
    return new UnsupportedOperationException("lakeformat: ALTER TABLE " + table + " " + c.getClass().getSimpleName()
        + ": " + what + " cannot be altered by the catalog (the library's schema evolution adds, renames, drops "
        + "and retypes top-level columns and sets table options)");
  }
}
