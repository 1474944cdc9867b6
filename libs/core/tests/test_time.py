import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from discospace.core import Time, TimeConversionError, TimeError, TimeFacts, TimeUnit
from discospace.core.time import TIME_PATTERN

WHOLE_UNITS = [u for u in TimeUnit if u is not TimeUnit.DURATION]
counts = st.integers(-(10**9), 10**9)
units = st.sampled_from(WHOLE_UNITS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3ep", Time(3, "ep")),
        ("3EP", Time(3, "ep")),
        ("3e4tok", Time(30000, "tok")),
        ("3E4TOK", Time(30000, "tok")),
        ("12 ba", Time(12, "ba")),
        ("100sp", Time(100, "sp")),
        ("7iter", Time(7, "iter")),
        ("30sec", Time(30, "sec")),
        ("0.1dur", Time(0.1, "dur")),
        ("1h20m40s", Time(4840, "sec")),
        ("2H", Time(7200, "sec")),
        ("1d", Time(86400, "sec")),
        ("45s", Time(45, "sec")),
        ("1.0ep", Time(1, "ep")),
    ],
)
def test_times_parse_case_insensitively(text: str, expected: Time) -> None:
    assert Time.parse(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("1.5ep", "1.5ep is not a whole number of ep"),
        ("2.5e-1tok", "not a whole number of tok"),
        ("3", "'3' is not a time"),
        ("ep", "'ep' is not a time"),
        ("3years", "is not a time"),
        ("", "is not a time"),
        ("1h20x", "is not a time"),
    ],
)
def test_a_bad_time_is_rejected_with_one_sentence(text: str, problem: str) -> None:
    with pytest.raises(TimeError, match=problem):
        Time.parse(text)


def test_a_time_prints_as_it_parses() -> None:
    for text in ("3ep", "0.25dur", "4840sec", "-2ba"):
        assert str(Time.parse(text)) == text


@given(counts, counts, counts, units)
def test_adding_times_of_one_unit_is_associative_and_commutative(a, b, c, unit) -> None:
    x, y, z = Time(a, unit), Time(b, unit), Time(c, unit)
    assert x + y == y + x
    assert (x + y) + z == x + (y + z)
    assert (x + y) - y == x


@given(counts, counts, units)
def test_comparisons_of_one_unit_follow_the_values(a, b, unit) -> None:
    x, y = Time(a, unit), Time(b, unit)
    assert (x < y) == (a < b)
    assert (x <= y) == (a <= b)
    assert (x > y) == (a > b)
    assert (x >= y) == (a >= b)
    assert (x == y) == (a == b)


@given(counts, st.integers(-1000, 1000), units)
def test_multiplying_by_a_number_keeps_the_unit(a, factor, unit) -> None:
    product = Time(a, unit) * factor
    assert product == Time(a * factor, unit)
    assert factor * Time(a, unit) == product


@given(counts, st.integers(1, 10**9), units)
def test_dividing_times_of_one_unit_gives_a_fraction_of_duration(a, b, unit) -> None:
    ratio = Time(a, unit) / Time(b, unit)
    assert ratio.unit is TimeUnit.DURATION
    assert ratio.value == pytest.approx(a / b)


@pytest.mark.parametrize(
    ("action", "problem"),
    [
        (lambda: Time(3, "ep") + Time(3, "ba"), "cannot add 3ep and 3ba"),
        (lambda: Time(3, "ep") - Time(3, "ba"), "cannot subtract"),
        (lambda: Time(3, "ep") < Time(3, "ba"), "cannot compare"),
        (lambda: Time(3, "ep") / Time(3, "ba"), "cannot divide"),
        (lambda: Time(3, "ep") / Time(0, "ep"), "by a zero time"),
        (lambda: Time(3, "ep") * 1.5, r"3ep \* 1.5 = 4.5ep is not a whole number of ep"),
        (lambda: Time(3, "ep") * Time(1, "ep"), "by a number"),
        (lambda: Time(3, "weeks"), "'weeks' is not a time unit"),
        (lambda: Time(1.5, "ep"), "not a whole number"),
    ],
)
def test_mixing_units_or_breaking_wholeness_is_an_error(action, problem: str) -> None:
    with pytest.raises(TimeError, match=problem):
        action()


def test_a_time_compares_with_its_text() -> None:
    assert Time(3, "ep") < "4ep"
    assert Time(3, "ep") + "2ep" == Time(5, "ep")


@pytest.mark.parametrize(
    ("start", "unit", "facts", "expected"),
    [
        ("0.1dur", "ep", {"max_duration": Time(90, "ep")}, "9ep"),
        ("0.29dur", "ep", {"max_duration": "100ep"}, "29ep"),
        (
            "0.5dur",
            "ba",
            {"max_duration": "3ep", "samples_per_epoch": 100, "batch_size": 10},
            "15ba",
        ),
        (
            "0.9dur",
            "ep",
            {"max_duration": "450ba", "samples_per_epoch": 100, "batch_size": 1},
            "4ep",
        ),
        ("3ep", "ba", {"samples_per_epoch": 1000, "batch_size": 32}, "96ba"),
        ("96ba", "ep", {"samples_per_epoch": 1000, "batch_size": 32}, "3ep"),
        ("150ba", "ep", {"samples_per_epoch": 1000, "batch_size": 10}, "1ep"),
        ("2ep", "sp", {"samples_per_epoch": 500}, "1000sp"),
        ("1200sp", "ep", {"samples_per_epoch": 500}, "2ep"),
        ("3ba", "sp", {"batch_size": 8}, "24sp"),
        ("25sp", "ba", {"batch_size": 8}, "3ba"),
        ("2ep", "tok", {"tokens_per_epoch": 10**6}, "2000000tok"),
        ("3e6tok", "ep", {"tokens_per_epoch": 10**6}, "3ep"),
        ("2ba", "tok", {"batch_size": 4, "tokens_per_sample": 10}, "80tok"),
        (
            "4ba",
            "tok",
            {"samples_per_epoch": 8, "batch_size": 4, "tokens_per_epoch": 100},
            "200tok",
        ),
        ("30ep", "dur", {"max_duration": "90ep"}, "0.3333333333333333dur"),
        ("5ep", "5ep", {}, "5ep"),
    ],
)
def test_conversions_use_the_facts_they_need(start, unit, facts, expected) -> None:
    target = Time.parse(expected).unit
    assert Time.parse(start).to(target, **facts) == Time.parse(expected)


def test_conversions_accept_a_facts_object_and_keywords_together() -> None:
    facts = TimeFacts(samples_per_epoch=1000)
    assert Time(2, "ep").to("ba", facts, batch_size=100) == Time(20, "ba")


@pytest.mark.parametrize(
    ("start", "unit", "facts", "missing"),
    [
        ("3ep", "ba", {"samples_per_epoch": 10}, "needs batch_size"),
        ("3ep", "ba", {}, "needs samples_per_epoch, batch_size"),
        ("3ep", "sp", {}, "needs samples_per_epoch"),
        ("3ba", "sp", {}, "needs batch_size"),
        ("3ep", "tok", {"batch_size": 2}, "needs tokens_per_epoch"),
        ("0.1dur", "ep", {}, "needs max_duration"),
        ("3ep", "dur", {}, "needs max_duration"),
        ("3ep", "sec", {}, "no conversion links ep and sec"),
        ("3iter", "ep", {}, "no conversion links iter and ep"),
    ],
)
def test_a_conversion_without_its_facts_names_what_is_missing(start, unit, facts, missing) -> None:
    with pytest.raises(TimeConversionError, match=missing):
        Time.parse(start).to(unit, **facts)


@given(st.integers(0, 10**6), st.integers(1, 10**4), st.integers(1, 512))
def test_epochs_to_batches_and_back_is_the_identity(epochs, samples, batch) -> None:
    facts = TimeFacts(samples_per_epoch=samples, batch_size=batch)
    assert Time(epochs, "ep").to("ba", facts).to("ep", facts) == Time(epochs, "ep")


@given(st.integers(0, 10**6), st.integers(1, 10**4))
def test_batches_to_epochs_rounds_down(batches, per_epoch) -> None:
    facts = TimeFacts(samples_per_epoch=per_epoch, batch_size=1)
    epochs = Time(batches, "ba").to("ep", facts)
    assert epochs.value == batches // per_epoch


def test_the_elapsed_fraction_is_counted_in_the_finer_unit() -> None:
    facts = TimeFacts(samples_per_epoch=1000, batch_size=10)
    assert Time(150, "ba").fraction_of("2ep", facts) == 0.75
    assert Time(1, "ep").fraction_of("400ba", facts) == 0.25
    assert Time(0.4, "dur").fraction_of("2ep") == 0.4
    with pytest.raises(TimeConversionError, match="no conversion links"):
        Time(10, "sec").fraction_of("2ep")


def test_facts_must_be_positive_whole_numbers() -> None:
    with pytest.raises(TimeError, match="batch_size must be a whole number above 0"):
        TimeFacts(batch_size=0)
    with pytest.raises(TimeError, match="max_duration must be a positive time not in dur"):
        TimeFacts(max_duration=Time(0.5, "dur"))
    with pytest.raises(TimeError, match="unknown time fact epochs"):
        Time(1, "ep").to("ba", epochs=3)


class Budget(BaseModel):
    limit: Time


def test_a_time_is_a_pydantic_field_written_as_text() -> None:
    budget = Budget.model_validate({"limit": "30sec"})
    assert budget.limit == Time(30, "sec")
    assert budget.model_dump_json() == '{"limit":"30sec"}'
    assert Budget.model_validate_json(budget.model_dump_json()) == budget
    assert Budget.model_json_schema()["properties"]["limit"]["type"] == "string"


def test_a_bad_time_field_is_a_validation_error_naming_the_problem() -> None:
    with pytest.raises(ValidationError, match=r"1\.5ep is not a whole number"):
        Budget.model_validate({"limit": "1.5ep"})


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        *[(text, True) for text in ("3ep", "3E4TOK", "1h20m40s", "0.1Dur", "45s", "1_000tok")],
        *[(text, False) for text in ("", "3", "ep", "3years", "1h20x", "1__0ep", "_1ep")],
        *[(text, False) for text in ("\uff13ep", "\u0663ep", "1\u0663h")],  # other scripts' digits
    ],
)
def test_the_json_schema_pattern_agrees_with_the_parser(text: str, matches: bool) -> None:
    assert bool(re.match(TIME_PATTERN, text)) is matches
    try:
        Time.parse(text)
        parsed = True
    except TimeError:
        parsed = False
    assert parsed is matches


def test_fractions_of_duration_add_as_the_decimals_they_are_written_as() -> None:
    assert Time.parse("0.1dur") + "0.2dur" == Time.parse("0.3dur")
    assert Time.parse("0.1dur") * 3 == Time.parse("0.3dur")


def test_huge_counts_stay_exact() -> None:
    assert Time(2**62, "tok") + Time(1, "tok") == Time(2**62 + 1, "tok")
    assert Time(2**62 - 1, "tok") * 2 + "1tok" == Time(2**63 - 1, "tok")


@pytest.mark.parametrize(
    "make",
    [
        lambda: Time.parse("9" * 320 + "s"),
        lambda: Time.parse("9" * 320 + "m"),
        lambda: Time.parse("9" * 4301 + "s"),  # beyond int()'s digit limit: was a ValueError
        lambda: Time.parse("1h" + "9" * 5000 + "s"),
        lambda: Time.parse("1e400ep"),
        lambda: Time(10**400, "tok"),
        lambda: Time(2**62, "tok") * 2,
        lambda: Time(1e308, "dur") + Time(1e308, "dur"),
    ],
)
def test_a_time_beyond_a_64_bit_count_is_refused_in_one_sentence(make) -> None:
    with pytest.raises(TimeError, match=r"is too large: a time holds at most 2\^63 - 1 \w+$"):
        make()


def test_a_conversion_rounds_once_even_through_a_coarser_unit() -> None:
    from fractions import Fraction

    from discospace.core.time_conversion import units_per

    # 100 batches an epoch, 10 samples a batch, 1000 tokens a sample: no tokens_per_sample, so
    # batches reach tokens through epochs
    facts = TimeFacts(samples_per_epoch=1000, batch_size=10, tokens_per_epoch=1_000_000)

    assert Time(550, "ba").to("tok", facts) == Time(5_500_000, "tok")
    assert Time(1000, "tok").to("sp", facts) == Time(1, "sp")
    assert Time(15_999, "tok").to("ba", facts) == Time(1, "ba")
    assert units_per("ba", "tok", facts) == 10_000
    assert units_per("TOK", "Ba", facts) == Fraction(1, 10_000)


def test_equality_reads_text_as_the_orderings_do() -> None:
    assert Time(5, "ep") == "5ep"
    assert Time(5, "ep") == " 5 EP "
    assert Time(5, "ep") != "5ba"
    assert Time(5, "ep") != "not a time"
    assert Time(5, "ep") != Time(5, "ba")
    assert len({Time(5, "ep"), Time.parse("5ep"), Time(5, "ba")}) == 2


def test_an_elapsed_time_in_a_coarser_unit_is_not_rounded_into_the_maximum_unit() -> None:
    facts = TimeFacts(samples_per_epoch=100, batch_size=1)
    assert Time(1, "ep").fraction_of("150ba", facts) == pytest.approx(2 / 3)
    assert Time(3, "sp").fraction_of("1ep", facts) == 0.03


def test_units_per_is_the_exact_ratio_between_two_units() -> None:
    from fractions import Fraction

    from discospace.core.time_conversion import units_per

    facts = TimeFacts(samples_per_epoch=1000, batch_size=8, tokens_per_sample=64)
    assert units_per("ep", "ba", facts) == 125
    assert units_per("ba", "ep", facts) == Fraction(1, 125)
    assert units_per("tok", "ep", facts) == Fraction(1, 64_000)
    assert units_per("sec", "sec", TimeFacts()) == 1
    assert units_per("dur", "ba", TimeFacts(max_duration=Time(2, "ep"), **_SP_BA)) == 250
    assert units_per("ep", "dur", TimeFacts(max_duration=Time(500, "ba"), **_SP_BA)) == Fraction(
        1, 4
    )
    with pytest.raises(TimeConversionError, match="no conversion links"):
        units_per("sec", "ep", facts)
    with pytest.raises(TimeConversionError, match="needs samples_per_epoch"):
        units_per("ep", "ba", TimeFacts(batch_size=8))
    with pytest.raises(TimeConversionError, match="needs max_duration"):
        units_per("dur", "ep", facts)


_SP_BA = {"samples_per_epoch": 1000, "batch_size": 8}


def test_a_time_times_a_fraction_of_duration_and_times_sum_as_composer_has_them() -> None:
    assert Time(2, "ep") * Time(0.5, "dur") == Time(1, "ep")
    assert Time(2, "ep") * "0.5dur" == "1ep"
    assert sum([Time(1, "ep"), Time(2, "ep")]) == Time(3, "ep")
    with pytest.raises(TimeError, match="only by a number or a dur"):
        Time(2, "ep") * Time(1, "ba")
    with pytest.raises(TimeError, match="different units"):
        sum([Time(1, "ep"), Time(2, "ba")])


@given(st.integers(1, 500), st.data())
def test_a_fraction_of_a_duration_comes_back_as_the_whole_count_it_was(maximum, data) -> None:
    """n/m of m epochs is n epochs: 1/3 is a float a little below a third, and its share of
    3ep (0.9999999999999999) was rounded down to 0ep."""
    count = data.draw(st.integers(0, maximum))
    fraction = Time(count, "ep") / Time(maximum, "ep")
    assert fraction.to("ep", max_duration=Time(maximum, "ep")) == Time(count, "ep")
    samples = fraction.to("sp", max_duration=Time(maximum, "ep"), samples_per_epoch=3)
    assert samples == Time(3 * count, "sp")


def test_a_share_of_a_duration_short_of_a_whole_count_still_rounds_down() -> None:
    assert Time(0.999, "dur").to("ep", max_duration="3ep") == Time(2, "ep")
    assert Time(0.3, "dur").to("ep", max_duration="3ep") == Time(0, "ep")


def test_a_time_takes_numbers_of_other_libraries_as_the_numbers_they_are() -> None:
    numpy = pytest.importorskip("numpy", reason="numpy is an optional dependency of the tests")
    assert Time(numpy.int64(3), "ep") == Time(3, "ep")
    assert Time(2, "ep") * numpy.int64(3) == Time(6, "ep")
    assert Time(numpy.float64(0.5), "dur") == Time(0.5, "dur")
    assert TimeFacts(samples_per_epoch=numpy.int64(3)).samples_per_epoch == 3


@pytest.mark.parametrize("factor", [float("inf"), float("-inf"), float("nan")])
def test_a_time_is_multiplied_or_divided_by_finite_numbers_only(factor) -> None:
    with pytest.raises(TimeError, match="can only multiply a time by a finite number"):
        Time(0, "ep") * factor
    with pytest.raises(TimeError, match="can only divide a time by a finite number"):
        Time(5, "ep") / factor


def test_a_dur_times_a_time_is_that_time_times_the_dur_in_either_order() -> None:
    """composer takes `0.5dur * 2ep` as `2ep * 0.5dur`; it was refused ('only by a number or
    a dur')."""
    assert Time(0.5, "dur") * Time(2, "ep") == Time(1, "ep")
    assert Time(2, "ep") * Time(0.5, "dur") == Time(1, "ep")


def test_a_time_s_text_minus_a_time_is_a_time() -> None:
    """`+` took a time's text on either side; `"5ep" - Time(2, "ep")` was a bare TypeError."""
    assert "5ep" - Time(2, "ep") == Time(3, "ep")


def test_a_time_s_text_over_a_time_is_a_fraction_of_duration() -> None:
    """`Time / "2ep"` was 1.5dur, `"3ep" / Time(2, "ep")` a bare TypeError."""
    assert "3ep" / Time(2, "ep") == Time(1.5, "dur")


def test_a_time_over_its_total_times_the_total_is_the_time_again() -> None:
    """`3ep * (1ep / 3ep)` was refused as 0.9999999999999999ep, though `convert` snaps the same
    share to 1ep; and a dur over a dur was a float division (0.3dur / 0.1dur gave
    2.9999999999999996dur)."""
    total = Time(3, "ep")
    assert total * (Time(1, "ep") / total) == Time(1, "ep")
    assert Time(7, "ba") * Time(1 / 7, "dur") == Time(1, "ba")
    assert Time(0.3, "dur") / Time(0.1, "dur") == Time(3, "dur")
    with pytest.raises(TimeError, match="not a whole number of ep"):
        total * 0.5  # a real fraction of a count is still refused
    with pytest.raises(TimeError, match=r"500000000000\.5tok is not a whole number"):
        Time(10**12 + 1, "tok") * 0.5  # a half, however large the count: as `/ 2` says


def test_the_schema_pattern_takes_the_white_space_the_parser_takes() -> None:
    """The pattern took 3, a no-break space and ep (ECMA-262's white space is Unicode's), the
    parser refused it with a message that printed it as the "3 ep" it takes; and the parser
    took a no-break space, an ideographic space or a file separator around the time, which the
    pattern refuses."""
    for text in ("3 ep", " 3ep\t", "3\u00a0ep", "3\u2003ep", "\u00a03ep", "3ep\u3000", "\x1c1h"):
        parses = True
        try:
            Time.parse(text)
        except TimeError:
            parses = False
        assert bool(re.fullmatch(TIME_PATTERN, text)) == parses, text


def test_a_dur_too_small_for_a_float_is_refused_not_zero() -> None:
    """1e-400dur read as 0.0dur: 'max_training must be above zero, not 0.0dur' for a positive
    value."""
    with pytest.raises(TimeError, match=r"1e-400dur is too small"):
        Time.parse("1e-400dur")
    assert Time.parse("1e-300dur").value == 1e-300


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("1e99999999999999999999ep", "is too large: a time holds at most 2^63 - 1 ep"),
        ("-1e99999999999999999999tok", "is too large: a time holds at most 2^63 - 1 tok"),
        ("1e-99999999999999999999dur", "is too small: a dur holds at least about 5e-324"),
        ("1e-99999999999999999999ep", "is not a whole number of ep: only dur takes fractions"),
    ],
)
def test_a_time_with_an_exponent_beyond_any_decimal_says_what_is_wrong(text, sentence) -> None:
    """Such exponents were 'not a number' (Python's Decimal holds exponents to 999999999)."""
    with pytest.raises(TimeError) as raised:
        Time.parse(text)
    assert str(raised.value).endswith(sentence)
    assert Time.parse("0e99999999999999999999ep").value == 0
