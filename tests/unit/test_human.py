"""The one size and duration formatter of the CLI, the Lakehouse page and the operators."""
import datetime as dt

import pytest

from lakeformat.format.human import human_duration, human_size
from lakeformat.format.options import parse_memory


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (1, "1 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1_260_000, "1.2 MiB"),
    (10 * 2**20 - 1, "10 MiB"),            # 9.9999 MiB rounds to 10: no "10.0"
    (2**20 - 1, "1.0 MiB"),                # 1023.999 KiB is not "1024.0 KiB"
    (123 * 2**30, "123 GiB"), (5 * 2**40, "5.0 TiB"), (-2048, "-2.0 KiB"), (None, ""),
])
def test_sizes(n, text):
    assert human_size(n) == text


def test_size_units_are_the_binary_ones_paimon_parses():
    assert human_size(parse_memory("64 mb")) == "64 MiB"
    assert human_size(parse_memory("512 kb")) == "512 KiB"


@pytest.mark.parametrize("d, text", [
    (0, "0 ms"), (0.85, "850 ms"), (4.23, "4.2 s"), (59.6, "1 min"), (200, "3 min 20 s"), (120, "2 min"),
    (7205, "2 h"),                          # adjacent units only: not "2 h 0 min 5 s"
    (dt.timedelta(minutes=90), "1 h 30 min"), (dt.timedelta(days=3, hours=4, seconds=5), "3 d 4 h"),
    (-200, "-3 min 20 s"), (None, ""),
])
def test_durations(d, text):
    assert human_duration(d) == text
