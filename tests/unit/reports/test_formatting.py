"""One number formatter (abtui.core.numbers): 3 significant digits, a rate in the unit its
value reads best in, `—` for a figure nobody measured; a mean ± sd never claims more digits
in its sd than the mean has."""

from __future__ import annotations

import math

import pytest

from abtui.core.numbers import rate, rate_unit, sig, spread
from abtui.reports import stats
from abtui.reports.formatting import fmt_duration, fmt_rate, fmt_time


@pytest.mark.parametrize(("x", "want"), [
    (9.412, "9.41"), (155.0, "155"), (10807, "10800"), (0.02134, "0.0213"), (999.6, "1000"),
    (19.08, "19.1"), (0.0, "0"), (math.nan, "—"), (None, "—"), (-0.5, "-0.500")])
def test_sig_keeps_three_significant_digits(x: float | None, want: str) -> None:
    assert sig(x) == want


@pytest.mark.parametrize(("bps", "want"), [
    (9.412e9, "9.41 Gbit/s"), (20.4e9, "20.4 Gbit/s"), (0.0214e9, "21.4 Mbit/s"),
    (1e9, "1.00 Gbit/s"), (155e6, "155 Mbit/s"), (64e3, "64.0 kbit/s"), (None, "—"),
    (math.inf, "—")])
def test_a_rate_reads_in_the_unit_that_keeps_three_digits(bps: float | None,
                                                          want: str) -> None:
    assert rate(bps) == want


def test_bytes_scale_alike() -> None:
    assert rate(76e6, "bytes") == "9.50 MB/s"
    assert rate(80e9, "bytes") == "10.0 GB/s"


def test_a_column_shares_the_unit_of_its_smallest_figure() -> None:
    unit = rate_unit([19.08e9, 0.02e9, None, math.nan])
    assert unit.name == "Mbit/s"
    assert [unit.figure(v) for v in (19.08e9, 0.02e9, None)] == ["19100", "20.0", "—"]
    assert rate_unit([]).name == "Mbit/s"  # nothing measured yet


@pytest.mark.parametrize("value", [None, "9.41e9", True, math.nan, math.inf, {"bps": 1}])
def test_a_figure_from_a_json_row_that_is_not_a_number_reads_unknown(value: object) -> None:
    # the session's rows are JSON: a host's summary can hold anything in a rate's field
    assert rate_unit([1e9]).figure(value) == "—"
    assert rate_unit([1e9]).figure(9.41e9) == "9.41"


@pytest.mark.parametrize(("mean", "sd", "want"), [
    (7704, 3407, "7700 ± 3410"), (9.41, 0.123, "9.41 ± 0.12"), (1.2, 12.345, "1.20 ± 12.3"),
    (200, 0, "200 ± 0"), (1.6, 0.0, "1.60 ± 0.00"), (1.88, 0.39, "1.88 ± 0.39"),
    (0.0213, None, "0.0213"),
    (None, 1.0, "—")])
def test_a_spread_s_sd_has_no_more_digits_than_its_mean(mean: float | None, sd: float | None,
                                                       want: str) -> None:
    assert spread(mean, sd) == want


def test_a_table_cell_s_sd_is_three_significant_digits_at_most() -> None:
    # the report printed `6360 ± 2687 (n=15)`: a 4-digit sd beside a 3-digit mean
    s = stats.summarize([6360 - 2687, 6360, 6360 + 2687])
    assert fmt_rate(s, 1.0) == "6360 ± 2690 (n=3)"



@pytest.mark.parametrize("t", [1e300, -1e300, float("nan"), float("inf")])
def test_a_time_no_calendar_holds_prints_a_question_mark(t: float) -> None:
    """A damaged session's times (a header's `created` of 1e300: what the shapes fuzz found)
    print as unknown; they used to raise OverflowError out of every report."""
    assert fmt_time(t) == "?"
    assert fmt_time(0.0) == "1970-01-01 00:00:00 UTC"


@pytest.mark.parametrize("span", [float("nan"), float("inf"), float("-inf")])
def test_a_span_no_clock_gives_prints_a_question_mark(span: float) -> None:
    """The span between two such times (1e308 - -1e308 is infinite) likewise."""
    assert fmt_duration(span) == "?"
    assert fmt_duration(3661.4) == "1:01:01"
