import math

import pytest

from discospace.core import DomainError, PropertyDomain, PropertySpec, domain_from_spec
from discospace.core.spec import ProbabilitySpec


def domain(**fields: object) -> PropertyDomain:
    return domain_from_spec(PropertySpec(name="p", **fields))


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"values": [1, 2, 4]}, "discrete"),
        ({"values": [0.5, 1]}, "discrete"),
        ({"values": ["a", "b"]}, "categorical"),
        ({"values": [True, False]}, "categorical"),
        ({"range": [0.0, 1.0]}, "continuous"),
        ({"range": [1e-5, 1e-3]}, "continuous"),
        ({"range": [0.5, 2]}, "continuous"),
        ({"type": "continuous", "range": [0, 1]}, "continuous"),
        ({"range": [0, 10], "interval": 2}, "discrete"),
        ({"type": "identifier"}, "identifier"),
        ({"type": "categorical", "values": [1, 2]}, "categorical"),
        ({"type": "discrete", "range": [0, 5]}, "discrete"),
    ],
)
def test_the_domain_type_is_inferred_or_taken_as_written(fields: dict, kind: str) -> None:
    assert domain(**fields).kind == kind


@pytest.mark.parametrize("bounds", [[8, 512], [0, 1]])
def test_a_range_of_whole_numbers_without_an_interval_or_a_type_is_refused(bounds: list) -> None:
    """Whole-number bounds read as a discrete range: never silently made continuous."""
    with pytest.raises(DomainError) as caught:
        domain(range=bounds)
    assert str(caught.value) == (
        f"property 'p' has a range of whole numbers [{bounds[0]}, {bounds[1]}] but no interval: "
        "add `interval: 1` (or another step) for a discrete range, "
        "or `type: continuous` for any number in between"
    )


def test_an_explicit_type_makes_a_range_without_an_interval_discrete_by_1_or_continuous() -> None:
    assert domain(type="discrete", range=[8, 12]).values == (8, 9, 10, 11)
    batch_size = domain(type="continuous", range=[8, 512])
    assert batch_size.kind == "continuous"
    assert 283.41 in batch_size


def test_a_discrete_range_excludes_its_upper_bound_and_steps_by_its_interval() -> None:
    steps = domain(range=[0, 10], interval=2)
    assert steps.values == (0, 2, 4, 6, 8)
    assert steps.size == 5
    assert 10 not in steps
    assert 3 not in steps
    assert 8 in steps


def test_a_discrete_range_with_decimal_steps_lists_exact_decimals() -> None:
    steps = domain(range=[0, 1], interval=0.1)
    assert steps.size == 10
    assert steps.values[3] == 0.3
    assert 0.3 in steps
    assert steps.index_of(0.7) == 7


def test_a_discrete_range_with_an_interval_that_does_not_divide_it_keeps_the_last_step() -> None:
    assert domain(range=[0, 10], interval=3).values == (0, 3, 6, 9)


def test_a_point_that_is_the_excluded_end_as_a_number_is_not_in_the_range() -> None:
    """Six steps of 0.16666666666666666 are 0.99999999999999996, below 1 as a decimal but the
    float 1.0: listed, it was the whole number 1 written as a float, an entity whose id no
    worker computes again from its values (the request was refused for good)."""
    sixths = domain(range=[0, 1], interval=0.16666666666666666)

    assert sixths.size == 6
    assert all(value < 1 for value in sixths.values)
    assert 1 not in sixths


@pytest.mark.parametrize(
    ("low", "high", "interval"),
    [(0, 1, 1 / 6), (0, 1, 1 / 7), (-3.7, 12.5, 1 / 97), (0.1, 9.3, 0.3), (-50, 50, 0.0625)],
)
def test_every_point_of_a_range_is_a_canonical_member_at_its_own_index(
    low: float, high: float, interval: float
) -> None:
    from discospace.core.canonical import normalise_number

    grid = domain(range=[low, high], interval=interval)

    for index, value in enumerate(grid.values):
        assert type(value) is type(normalise_number(value))
        assert grid.normalise(value) == value
        assert grid.index_of(value) == index
        assert value < high


def test_a_huge_discrete_range_knows_its_size_and_indices_without_listing() -> None:
    huge = domain(range=[0, 10**15], interval=1)
    assert huge.size == 10**15
    assert huge.value_at(10**15 - 1) == 10**15 - 1
    assert huge.index_of("123456789") == 123456789


def test_a_continuous_domain_includes_both_ends_and_cannot_be_counted() -> None:
    line = domain(range=[0.5, 2])
    assert line.size == math.inf
    assert 0.5 in line
    assert 2 in line
    assert 2.0001 not in line
    with pytest.raises(DomainError, match="no list of values"):
        _ = line.values


def test_an_identifier_domain_holds_any_scalar_and_cannot_be_counted() -> None:
    ids = domain(type="identifier")
    assert ids.size == math.inf
    assert "run-17" in ids
    assert 17 in ids
    assert [1] not in ids


def test_numbers_are_one_value_whether_written_as_int_float_or_text_in_a_numeric_domain() -> None:
    sizes = domain(values=[1, 2, 4])
    assert sizes.normalise(4.0) == 4
    assert sizes.normalise("4") == 4
    assert isinstance(sizes.normalise("4"), int)
    assert sizes.normalise(True) is None


@pytest.mark.parametrize(
    "fields",
    [{"range": [0.0, 1.0]}, {"range": [0, 10], "interval": 1}, {"values": [1, 2]},
     {"type": "identifier"}],
    ids=["continuous", "grid", "listed", "identifier"],
)  # fmt: skip
def test_a_whole_number_beyond_64_bits_is_no_member_not_an_overflow(fields: dict) -> None:
    """A point of 10^400 raised OverflowError (math.isfinite of the int): the sampler's handler
    failed instead of rejecting the point, and its request went unanswered."""
    assert domain(**fields).normalise(10**400) is None
    assert domain(**fields).normalise(-(10**400)) is None


def test_a_whole_number_written_as_text_is_read_exactly() -> None:
    """Through a float, "9007199254740993" was 9007199254740992, the other member."""
    listed = domain(values=[2**53, 2**53 + 1])
    grid = domain(range=[0, 2**63 - 1], interval=1024)

    assert listed.normalise("9007199254740993") == 2**53 + 1
    assert grid.normalise("4611686018427388905") is None  # 41 off the grid
    assert grid.normalise(str(2**62)) == 2**62


def test_a_categorical_domain_of_strings_does_not_take_numbers_written_differently() -> None:
    names = domain(values=["1", "2"])
    assert names.normalise(1) == "1"
    assert names.normalise(1.5) is None
    assert domain(values=[True, False]).normalise("true") is True


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"values": []}, "has no values"),
        ({}, "has no values and no range"),
        ({"range": [5, 5]}, "low \\(5\\) is not below its high \\(5\\)"),
        ({"range": [6, 5], "interval": 1}, "is not below"),
        ({"range": [0, 5], "interval": 0}, "interval of 0"),
        ({"range": [0, 5], "interval": -1}, "interval of -1"),
        ({"values": [1, "a"]}, "mixes value types \\(numbers and strings\\)"),
        ({"values": [1, 1.0]}, "lists the value 1 twice"),
        ({"values": [1], "range": [0, 2]}, "both values and a range"),
        ({"type": "continuous", "values": [1, 2]}, "takes no list of values"),
        ({"type": "categorical", "range": [0, 1]}, "takes no range"),
        ({"type": "discrete", "values": ["a"]}, "values are not numbers"),
        ({"values": [1], "interval": 1}, "interval without a range"),
        ({"range": [0, 1], "type": "continuous", "interval": 0.1}, "takes no interval"),
        ({"type": "identifier", "interval": 3}, "is an identifier and takes no interval"),
        (
            {"values": ["a"], "probability": ProbabilitySpec(name="normal", mean=0, std=1)},
            "values are not numbers",
        ),
        ({"range": [0.0, 1.0], "probability": ProbabilitySpec(name="normal", mean=0)}, "both mean"),
        (
            {"range": [0.0, 1.0], "probability": ProbabilitySpec(name="normal", mean=0, std=0)},
            "std 0",
        ),
        (
            {"range": [0, 1.5], "interval": 1e-300},
            "has a range of about 10\\^300 values at interval 1e-300, over the limit of 2\\^53",
        ),
        ({"range": [0, 2**53 + 1], "interval": 1}, "has a range of 9007199254740993 values"),
        # an interval below two float spacings near a bound: values would repeat
        (
            {"range": [2**53, 2**53 + 4], "interval": 0.5},
            "has an interval of 0.5, finer than a float can tell apart near 9007199254740996",
        ),
        ({"range": [1e15, 1e15 + 1], "interval": 0.0625}, "finer than a float can tell apart"),
        # a whole number beyond 64 bits (1e20 in a file is one): no event or column holds it
        ({"values": [1, 1e20]}, "has the whole number about 10\\^20 .*beyond 64 bits"),
        ({"values": [-(2**63) - 1]}, "has the whole number minus about 10\\^19"),
        ({"range": [0, 2**64], "interval": 1}, "has the whole number about 10\\^19"),
        (  # every draw was the range's upper bound
            {
                "range": [0.0, 1.0],
                "probability": ProbabilitySpec(name="normal", mean=100, std=1),
            },
            "almost none of its mass inside its range",
        ),
    ],
)
def test_an_ill_formed_domain_is_rejected_with_one_sentence_naming_the_property(
    fields: dict, problem: str
) -> None:
    with pytest.raises(DomainError, match=f"^property 'p' .*{problem}") as caught:
        domain(**fields)
    assert "\n" not in str(caught.value)


def test_a_property_name_with_a_dot_is_rejected_because_dots_mark_observed_properties() -> None:
    with pytest.raises(DomainError, match=r"gpu\.model"):
        domain_from_spec(PropertySpec(name="gpu.model", values=[1]))


@pytest.mark.parametrize(
    ("small", "large", "expected"),
    [
        ({"values": [2, 4]}, {"values": [1, 2, 4]}, True),
        ({"values": [2, 3]}, {"values": [1, 2, 4]}, False),
        ({"values": [2, 4]}, {"range": [0, 10], "interval": 2}, True),
        ({"range": [2, 8], "interval": 2}, {"range": [0, 10], "interval": 2}, True),
        ({"range": [2, 8], "interval": 4}, {"range": [0, 10], "interval": 2}, True),
        ({"range": [1, 8], "interval": 2}, {"range": [0, 10], "interval": 2}, False),
        ({"range": [0, 10**12], "interval": 1}, {"range": [0, 10**13], "interval": 1}, True),
        ({"range": [0, 10**12], "interval": 1}, {"values": [1, 2]}, False),
        ({"range": [0.2, 0.5]}, {"range": [0.0, 1.0]}, True),
        ({"range": [0.0, 2.0]}, {"range": [0.0, 1.0]}, False),
        ({"values": [0.5]}, {"range": [0.0, 1.0]}, True),
        ({"values": ["a"]}, {"range": [0.0, 1.0]}, False),
        ({"values": ["a"]}, {"type": "identifier"}, True),
        ({"type": "identifier"}, {"values": ["a"]}, False),
        ({"range": [0.0, 1.0]}, {"values": [0, 1]}, False),
    ],
)
def test_sub_domains_are_recognised(small: dict, large: dict, expected: bool) -> None:
    assert domain(**small).is_subdomain_of(domain(**large)) is expected


def test_domains_with_the_same_values_are_equal_whatever_their_order() -> None:
    assert domain(values=[1, 2, 4]) == domain(values=[4, 1, 2])
    assert domain(values=[0, 2, 4]) == domain(range=[0, 6], interval=2)
    assert domain(values=[1, 2]) != domain(values=[1, 2, 3])


def test_draw_follows_a_truncated_normal_law_on_a_continuous_range() -> None:
    law = ProbabilitySpec(name="normal", mean=5, std=1)
    line = domain(range=[0.0, 10.0], probability=law)
    draws = [line.draw(i / 1000) for i in range(1000)]
    assert all(0 <= d <= 10 for d in draws)
    near_mean = sum(1 for d in draws if 4 <= d <= 6) / len(draws)
    assert 0.6 < near_mean < 0.75  # about 68% within one std


@pytest.mark.parametrize(
    "fields", [{"values": [0, 10]}, {"range": [1, 1001], "interval": 1}], ids=["values", "range"]
)
def test_a_normal_probability_on_a_finite_property_is_refused(fields: dict) -> None:
    """A random walk visits a finite property's values by permutation, each once: the law was
    accepted (and changed the space's id) but never shaped a draw (normal(10, 2) over
    [1, 1001) walked 550, 830, 345, ...)."""
    law = ProbabilitySpec(name="normal", mean=10, std=2)
    with pytest.raises(DomainError, match="shapes only the draws of a continuous property"):
        domain(probability=law, **fields)


def test_an_identifier_domain_cannot_be_drawn_from() -> None:
    with pytest.raises(DomainError, match="cannot be sampled"):
        domain(type="identifier").draw(0.5)


@pytest.mark.parametrize("name", ["entity_id", "status", "reason"])
def test_a_property_cannot_be_named_as_a_column_every_view_has(name: str) -> None:
    """Registered, the space's views failed: two columns of that name."""
    with pytest.raises(DomainError, match=f"property name '{name}' is a column every view"):
        domain_from_spec(PropertySpec(name=name, values=[1]))


def test_a_normal_probability_mostly_inside_its_range_is_kept() -> None:
    law = ProbabilitySpec(name="normal", mean=0.9, std=0.5)
    assert domain(range=[0.0, 1.0], probability=law).probability.mean == 0.9


@pytest.mark.parametrize(
    ("fields", "near", "point"),
    [
        ({"range": [0, 80_000_000_000], "interval": 1_000_000_000}, 8_000_000_001, 8_000_000_000),
        ({"range": [0, 80_000_000_000], "interval": 1_000_000_000}, 7_999_999_999, 8_000_000_000),
        ({"range": [0, 10**13], "interval": 10**12}, 5_000_000_000_999, 5 * 10**12),
        ({"range": [0.0, 8e10], "interval": 1e9}, 8_000_000_001.0, 8_000_000_000),
    ],
    ids=["one-above", "one-below", "999-above", "float-grid"],
)
def test_a_number_off_a_coarse_grid_is_no_member_not_its_neighbour(
    fields: dict, near: float, point: int
) -> None:
    """The grid's tolerance was a fraction of its interval: with an interval of 10^9, the whole
    number 8000000001 was taken for the point 8000000000 (a store import filed its row there,
    and the projector counted it inside the space where the explorer did not)."""
    grid = domain(**fields)

    assert grid.normalise(point) == point
    assert grid.normalise(near) is None
    assert near not in grid


@pytest.mark.parametrize(
    ("fields", "value"),
    [
        ({"range": [0, 2**53], "interval": 1}, 5.5),
        ({"range": [0, 10**12], "interval": 1}, 5.001),
        ({"range": [0, 2**60], "interval": 1000}, 1500.5),
        ({"range": [0.0, 1e15], "interval": 0.25}, 3.3),
        ({"range": [-1e12, 1e12], "interval": 0.001}, 0.0045),
    ],
)
def test_a_value_between_points_of_a_grid_with_far_bounds_is_no_member(
    fields: dict, value: float
) -> None:
    """Measured against the grid's bounds alone, the noise allowed grew past the interval on
    a grid with far bounds: 5.5 was the seed 6, 0.0045 the point 0.004."""
    assert domain(**fields).normalise(value) is None


def test_float_noise_around_a_grid_point_is_that_point() -> None:
    grid = domain(range=[0.0, 1.0], interval=0.1)

    assert grid.normalise(0.1 * 3) == 0.3  # 0.30000000000000004
    assert grid.normalise(sum([0.1] * 8)) == 0.8  # 0.7999999999999999
    assert grid.normalise(0.1 * 3 - 0.3) == 0  # 5.5e-17: noise around the point 0
    assert grid.normalise(0.35) is None


def test_float_noise_below_the_lowest_point_is_that_point() -> None:
    """The bound was checked before the noise: 0.7 - 0.4 (0.29999999999999993) was no point
    of [0.3, 1.0] step 0.1, though 0.30000000000000004 was."""
    grid = domain(range=[0.3, 1.0], interval=0.1)

    assert grid.normalise(0.7 - 0.4) == 0.3
    assert grid.normalise(0.29) is None
    assert domain(range=[3, 10], interval=1).normalise(2.9999999999999996) is None


@pytest.mark.parametrize(
    "text",
    ["9007199254740993", "9007199254740993.0", "9.007199254740993e15", " +9007199254740993 "],
)
def test_a_whole_number_written_with_a_point_or_an_exponent_is_read_exactly(text: str) -> None:
    """int() refused these spellings and float() read them as 2^53, another entity: a store
    import's row was filed under its neighbour."""
    grid = domain(range=[2**53 - 8, 2**53 + 8], interval=1)

    assert grid.normalise(text) == 2**53 + 1
    assert domain(values=[2**53 + 1]).normalise(text) == 2**53 + 1


@pytest.mark.parametrize("text", ["9007199254740993.5", "9007199254740994.9"])
def test_a_fraction_no_float_holds_is_no_whole_point(text: str) -> None:
    """The float read it as a whole number: a fraction was a point of a whole-number grid."""
    assert domain(range=[2**53 - 8, 2**53 + 8], interval=1).normalise(text) is None
    assert domain(values=[2**53 + 2, 2**53 + 4]).normalise(text) is None


@pytest.mark.parametrize(
    ("text", "value"),
    [("1.00000000000000001", 1), ("0.99999999999999999", 1), ("1e-400", 0), ("1.5", 1.5)],
)
def test_a_continuous_domain_reads_written_numbers_as_the_nearest_float(text, value) -> None:
    """Only a domain of whole numbers refuses a fraction whose float is whole."""
    assert domain(range=[0, 2], type="continuous").normalise(text) == value


@pytest.mark.parametrize(
    ("fields", "values"),
    [
        ({"range": [-1, 1e-30], "interval": 1}, (-1, 0)),
        ({"range": [-(10**18), 1e-10], "interval": 10**18}, (-(10**18), 0)),
    ],
)
def test_a_span_a_hair_over_whole_steps_counts_its_last_point(fields: dict, values) -> None:
    """The span was divided in 28 digits: N + 1e-30 steps was N, and the point 0 < high was
    missing from the domain."""
    assert domain(**fields).values == values


@pytest.mark.parametrize(("low", "step"), [(-100.0, 0.01), (-1.0, 0.001), (-5.0, 0.01)])
def test_a_point_built_from_a_far_low_bound_is_that_point(low: float, step: float) -> None:
    """Optuna builds a stepped float as `k * step + low`: near 0 on [-100, 100) it is off by an
    ulp of 100, which 64 ulps of the point alone refused (the whole search failed)."""
    grid = domain(range=[low, -low], interval=step)
    size = round(-2 * low / step)

    built = [k * step + low for k in range(size)]

    assert all(grid.normalise(value) == grid.value_at(k) for k, value in enumerate(built))


@pytest.mark.parametrize("text", ["\u0668", "\uff18", "1_000", "8 8", "0x8"])
def test_a_number_is_read_from_ascii_digits_only(text: str) -> None:
    """`int()` and `float()` read other scripts' digits and `_` separators: a store import's
    cell "٨" became the entity 8, while every table reader refuses it (`NUMBER_TEXT`)."""
    sizes = domain(values=[8, 1000])

    assert sizes.normalise(text) is None
    assert sizes.normalise(" 8\n") == 8
