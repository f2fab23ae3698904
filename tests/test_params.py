import pytest

from gpulab.core.params import (
    Bool,
    Choice,
    Float,
    Int,
    List,
    ParamError,
    ParamSet,
    UnknownParam,
    format_number,
    parse_assignments,
    parse_number,
)


@pytest.mark.parametrize(
    "text,value",
    [
        ("4096", 4096),
        ("1e8", 1e8),
        ("100M", 1e8),
        ("2.5k", 2500),
        ("1Gi", 2**30),
        ("64Ki", 65536),
        ("1_000", 1000),
        ("1B", 1e9),
        (12, 12),
    ],
)
def test_parse_number(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1e", "10X", "--1", True])
def test_parse_number_rejects(text):
    with pytest.raises(ValueError):
        parse_number(text)


def test_format_number():
    assert format_number(10_000_000) == "10M"
    assert format_number(1e12) == "1T"
    assert format_number(1500) == "1500"
    assert format_number(0.5) == "0.5"


def test_int_bounds_and_message_names_everything():
    p = Int("samples", 1000, min=1000, max=1e12, unit="samples")
    assert p.parse("1e8") == 100_000_000
    assert isinstance(p.parse("1e8"), int)
    with pytest.raises(ParamError) as err:
        p.parse("1e13")
    msg = str(err.value)
    assert "samples" in msg and "1e13" in msg and "1k" in msg and "1T" in msg
    with pytest.raises(ParamError):
        p.parse("2.5")  # not whole
    with pytest.raises(ParamError):
        p.parse("nan")


def test_float_choice_bool():
    f = Float("hold", 2.0, min=0, max=60)
    assert f.parse("1.5") == 1.5
    with pytest.raises(ParamError):
        f.parse("61")
    c = Choice("kernel", "gaussian", ["gaussian", "box"])
    assert c.parse("BOX") == "box"
    with pytest.raises(ParamError) as err:
        c.parse("median")
    assert "gaussian, box" in str(err.value)
    b = Bool("pinned", True)
    assert b.parse("no") is False and b.parse("on") is True
    with pytest.raises(ParamError):
        b.parse("maybe")


def test_list_of_ints_and_choices():
    sizes = List("sizes", [256, 512], item="int", min=16, max=16384)
    assert sizes.parse("256,1k, 4096") == [256, 1000, 4096]
    assert sizes.parse([128, "2k"]) == [128, 2000]
    assert sizes.parse("256,256") == [256]
    with pytest.raises(ParamError):
        sizes.parse("8,256")
    with pytest.raises(ParamError):
        sizes.parse("")
    dtypes = List("dtypes", ["fp32"], item="choice", choices=("fp32", "bf16"))
    assert dtypes.parse("BF16,fp32") == ["bf16", "fp32"]
    with pytest.raises(ParamError):
        dtypes.parse("fp8")


def test_paramset_validate_fills_defaults_and_rejects_unknown():
    ps = ParamSet((Int("n", 10, min=1), Choice("mode", "a", ["a", "b"])))
    assert ps.validate({}) == {"n": 10, "mode": "a"}
    assert ps.validate({"n": "20"}) == {"n": 20, "mode": "a"}
    with pytest.raises(UnknownParam) as err:
        ps.validate({"size": 1})
    assert "size" in str(err.value) and "n, mode" in str(err.value)


def test_parse_assignments():
    assert parse_assignments(["a=1", "b = x"]) == {"a": "1", "b": "x"}
    with pytest.raises(ValueError):
        parse_assignments(["novalue"])
