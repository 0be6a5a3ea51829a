"""Great Expectations' expectations as the pipeline config may name them, so that loading the
config checks rule names and arguments without importing Great Expectations (seconds).

``CATALOGUE``: snake-case name -> (required arguments, optional arguments), besides ``COMMON``
(what every expectation takes). Written by ``python -m lakeformat.pipeline.gx_catalogue`` from
the pinned great-expectations; tests/unit/test_quality.py fails when the installed one differs.
"""
from __future__ import annotations

import re

COMMON = ("catch_exceptions", "description", "meta", "mostly", "notes", "result_format", "severity")
_INTERNAL = {"id", "rendered_content", "batch_id", "windows"}


def catalogue_from(gx) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """The catalogue as the installed Great Expectations defines it."""
    out = {}
    for camel in sorted(n for n in dir(gx.expectations) if n.startswith("Expect") and n != "Expectation"):
        fields = getattr(gx.expectations, camel).__fields__
        own = [k for k in fields if k not in _INTERNAL and k not in COMMON]
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()
        out[snake] = (tuple(k for k in own if fields[k].required), tuple(k for k in own if not fields[k].required))
    return out


CATALOGUE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "expect_column_distinct_values_to_be_in_set": (("column", "value_set"), ("row_condition", "condition_parser")),
    "expect_column_distinct_values_to_contain_set": (("column", "value_set"), ("row_condition", "condition_parser")),
    "expect_column_distinct_values_to_equal_set": (("column", "value_set"), ("row_condition", "condition_parser")),
    "expect_column_k_l_divergence_to_be_less_than": (("column",), ("row_condition", "condition_parser", "partition_object", "threshold", "internal_weight_holdout", "tail_weight_holdout", "bucketize_data", "min_value", "max_value")),
    "expect_column_max_to_be_between": (("column",), ("row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max")),
    "expect_column_mean_to_be_between": (("column",), ("row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max")),
    "expect_column_median_to_be_between": (("column",), ("row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max")),
    "expect_column_min_to_be_between": (("column",), ("row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max")),
    "expect_column_most_common_value_to_be_in_set": (("column", "value_set"), ("row_condition", "condition_parser", "ties_okay")),
    "expect_column_pair_values_a_to_be_greater_than_b": (("column_A", "column_B"), ("row_condition", "condition_parser", "or_equal", "ignore_row_if")),
    "expect_column_pair_values_to_be_equal": (("column_A", "column_B"), ("row_condition", "condition_parser", "ignore_row_if")),
    "expect_column_pair_values_to_be_in_set": (("column_A", "column_B", "value_pairs_set"), ("row_condition", "condition_parser", "ignore_row_if")),
    "expect_column_proportion_of_non_null_values_to_be_between": (("column",), ("row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max", "library_metadata")),
    "expect_column_proportion_of_unique_values_to_be_between": (("column",), ("row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max", "library_metadata")),
    "expect_column_quantile_values_to_be_between": (("column", "quantile_ranges"), ("row_condition", "condition_parser", "allow_relative_error")),
    "expect_column_stdev_to_be_between": (("column",), ("row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max")),
    "expect_column_sum_to_be_between": (("column",), ("row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max")),
    "expect_column_to_exist": (("column",), ("column_index",)),
    "expect_column_type_to_be": (("column", "type_"), ()),
    "expect_column_unique_value_count_to_be_between": (("column",), ("row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max", "library_metadata")),
    "expect_column_value_lengths_to_be_between": (("column",), ("row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max")),
    "expect_column_value_lengths_to_equal": (("column", "value"), ("row_condition", "condition_parser")),
    "expect_column_value_z_scores_to_be_less_than": (("column", "threshold", "double_sided"), ("row_condition", "condition_parser")),
    "expect_column_values_to_be_between": (("column",), ("row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max")),
    "expect_column_values_to_be_dateutil_parseable": (("column",), ("row_condition", "condition_parser", "library_metadata")),
    "expect_column_values_to_be_decreasing": (("column",), ("row_condition", "condition_parser", "strictly", "library_metadata")),
    "expect_column_values_to_be_in_set": (("column", "value_set"), ("row_condition", "condition_parser")),
    "expect_column_values_to_be_in_type_list": (("column",), ("row_condition", "condition_parser", "type_list")),
    "expect_column_values_to_be_increasing": (("column",), ("row_condition", "condition_parser", "strictly", "library_metadata")),
    "expect_column_values_to_be_json_parseable": (("column",), ("row_condition", "condition_parser", "library_metadata")),
    "expect_column_values_to_be_null": (("column",), ("row_condition", "condition_parser")),
    "expect_column_values_to_be_of_type": (("column", "type_"), ("row_condition", "condition_parser")),
    "expect_column_values_to_be_unique": (("column",), ("row_condition", "condition_parser")),
    "expect_column_values_to_match_json_schema": (("column", "json_schema"), ("row_condition", "condition_parser", "library_metadata")),
    "expect_column_values_to_match_like_pattern": (("column", "like_pattern"), ("row_condition", "condition_parser", "escape")),
    "expect_column_values_to_match_like_pattern_list": (("column", "like_pattern_list"), ("row_condition", "condition_parser", "match_on", "escape")),
    "expect_column_values_to_match_regex": (("column",), ("row_condition", "condition_parser", "regex")),
    "expect_column_values_to_match_regex_list": (("column", "regex_list"), ("row_condition", "condition_parser", "match_on")),
    "expect_column_values_to_match_strftime_format": (("column", "strftime_format"), ("row_condition", "condition_parser")),
    "expect_column_values_to_not_be_in_set": (("column", "value_set"), ("row_condition", "condition_parser")),
    "expect_column_values_to_not_be_null": (("column",), ("row_condition", "condition_parser")),
    "expect_column_values_to_not_be_outliers": (("column",), ("row_condition", "condition_parser", "method", "multiplier")),
    "expect_column_values_to_not_match_like_pattern": (("column", "like_pattern"), ("row_condition", "condition_parser", "escape")),
    "expect_column_values_to_not_match_like_pattern_list": (("column", "like_pattern_list"), ("row_condition", "condition_parser", "escape")),
    "expect_column_values_to_not_match_regex": (("column", "regex"), ("row_condition", "condition_parser")),
    "expect_column_values_to_not_match_regex_list": (("column", "regex_list"), ("row_condition", "condition_parser")),
    "expect_compound_columns_to_be_unique": (("column_list",), ("row_condition", "condition_parser", "ignore_row_if")),
    "expect_multicolumn_sum_to_equal": (("column_list", "sum_total"), ("row_condition", "condition_parser", "ignore_row_if")),
    "expect_multicolumn_values_to_be_equal": (("column_list",), ("row_condition", "condition_parser", "ignore_row_if")),
    "expect_multicolumn_values_to_be_unique": (("column", "column_list"), ("row_condition", "condition_parser", "ignore_row_if", "library_metadata")),
    "expect_query_results_to_match_comparison": (("base_query", "comparison_data_source_name", "comparison_query"), ()),
    "expect_select_column_values_to_be_unique_within_record": (("column_list",), ("row_condition", "condition_parser", "ignore_row_if")),
    "expect_table_column_count_to_be_between": ((), ("min_value", "max_value")),
    "expect_table_column_count_to_equal": (("value",), ()),
    "expect_table_columns_to_match_ordered_list": ((), ("column_list",)),
    "expect_table_columns_to_match_set": ((), ("column_set", "exact_match")),
    "expect_table_row_count_to_be_between": ((), ("min_value", "max_value", "strict_min", "strict_max", "row_condition", "condition_parser")),
    "expect_table_row_count_to_equal": (("value",), ("row_condition", "condition_parser")),
    "expect_table_row_count_to_equal_other_table": (("other_table_name",), ("row_condition", "condition_parser")),
}

if __name__ == "__main__":
    import great_expectations

    print("CATALOGUE = {")
    for name, args in catalogue_from(great_expectations).items():
        print(f"    {name!r}: {args!r},")
    print("}")
