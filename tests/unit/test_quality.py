"""The data-quality gate: config parsing (no Great Expectations needed) and real GE audits."""
import pyarrow as pa
import pytest

from lakeformat.pipeline.quality import QualityConfigError, audit, build, parse_expectations

EXPECT = [
    {"expect_table_row_count_to_be_between": {"min_value": 1}},
    {"expect_column_values_to_not_be_null": {"column": "user_id"}},
    {"expect_column_values_to_be_in_set": {"column": "behavior", "value_set": ["pv", "buy"]}},
    {"expect_column_values_to_be_between": {"column": "price", "min_value": 0, "max_value": 100}},
]


def rows(user_id, behavior, price):
    return pa.table({"user_id": pa.array(user_id, pa.int64()), "behavior": pa.array(behavior, pa.string()),
                     "price": pa.array(price, pa.float64())})


@pytest.mark.parametrize("entries, fragment", [
    ("expect_x", "must be a list"),
    ([{"a": 1, "b": 2}], "one 'expect_...: {arguments}' mapping"),
    ([{"not_an_expectation": {}}], "is not an expectation name"),
    ([{"expect_column_values_to_not_be_null": [1]}], "must be a mapping"),
])
def test_bad_config_entries_are_named(entries, fragment):
    with pytest.raises(QualityConfigError, match=fragment):
        parse_expectations(entries, "table 't'")


def test_unknown_expectation_and_bad_arguments_fail_before_reading_data():
    with pytest.raises(QualityConfigError, match="unknown expectation 'expect_rows_to_be_nice'"):
        build(parse_expectations([{"expect_rows_to_be_nice": {}}]), "t")
    with pytest.raises(QualityConfigError, match="invalid arguments for expect_column_values_to_not_be_null"):
        build(parse_expectations([{"expect_column_values_to_not_be_null": {"colum": "x"}}]), "t")


def test_clean_rows_pass():
    report = audit(rows([1, 2], ["pv", "buy"], [1.0, 99.5]), parse_expectations(EXPECT), "db.t 2024-06-01")
    assert report.success and not report.failed and report.rows == 2
    assert report.summary() == "db.t 2024-06-01: all 4 expectations passed on 2 rows"


def test_failures_name_expectation_counts_and_samples():
    bad = rows([1, None, 3, 4], ["pv", "steal", "steal", "buy"], [1.0, -2.0, 5.0, None])
    report = audit(bad, parse_expectations(EXPECT), "db.t 2024-06-02")
    assert not report.success
    failed = {o.expectation.name: o for o in report.failed}
    assert set(failed) == {"expect_column_values_to_not_be_null", "expect_column_values_to_be_in_set",
                           "expect_column_values_to_be_between"}
    assert failed["expect_column_values_to_be_in_set"].unexpected_count == 2
    assert failed["expect_column_values_to_be_in_set"].samples == ("steal", "steal")
    assert failed["expect_column_values_to_be_between"].samples == (-2.0,)
    text = report.summary()
    assert text.splitlines()[0] == "db.t 2024-06-02: 3 of 4 expectations failed on 4 rows"
    assert "2 of 4 rows unexpected; e.g. 'steal', 'steal'" in text
    assert "expect_column_values_to_not_be_null(column='user_id'): 1 of 4 rows unexpected; e.g. null" in text


def test_empty_stage_fails_row_count_and_missing_column_is_reported():
    expectations = parse_expectations(EXPECT[:1] + [{"expect_column_values_to_not_be_null": {"column": "nope"}}])
    report = audit(rows([], [], []), expectations, "t")
    assert [o.success for o in report.outcomes] == [False, False]
    assert "observed 0" in report.summary()
    assert 'could not run: Error: The column "nope"' in report.summary()


def test_the_expectation_catalogue_is_the_installed_great_expectations():
    """The config loader checks rules against gx_catalogue without importing GE: it must say
    what the pinned great-expectations says (regenerate with python -m lakeformat.pipeline.gx_catalogue)."""
    import great_expectations as gx

    from lakeformat.pipeline.gx_catalogue import CATALOGUE, COMMON, catalogue_from
    assert catalogue_from(gx) == CATALOGUE
    for name, (required, optional) in CATALOGUE.items():
        fields = getattr(gx.expectations, "".join(p.capitalize() for p in name.split("_"))).__fields__
        assert set(required) | set(optional) | {c for c in COMMON if c in fields} <= set(fields)
