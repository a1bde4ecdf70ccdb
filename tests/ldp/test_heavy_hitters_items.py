"""Item encoding of the heavy-hitters protocols: ints, str and bytes, and the bad-input errors
(which name the argument and position, never a private item)."""
import numpy as np
import pytest

import dpnoise
from dpnoise.ldp import HeavyHitters
from dpnoise.ldp.heavy_hitters._items import long_item_digest


def codec(**kw):
    return HeavyHitters("pem", 4.0, **kw).codec


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
def test_any_integer_dtype(dtype):
    c = codec(item_bits=8)
    x = np.array([0, 1, 127, 5], dtype=dtype)
    assert c.encode(x).tolist() == [0, 1, 127, 5]
    assert c.encode([0, 1, 127, 5]).tolist() == [0, 1, 127, 5]


def test_full_64_bit_range_and_python_ints():
    c = codec(item_bits=64)
    big = [2**64 - 1, 2**63, 0]
    assert c.encode(big).tolist() == big
    assert c.encode(np.array(big, dtype=np.uint64)).tolist() == big
    with pytest.raises(ValueError, match="item_bits"):
        c.encode([2**64])


def test_int_errors():
    c = codec(item_bits=32)
    with pytest.raises(ValueError, match=r"\[0, 2\^32\)"):
        c.encode(np.array([2**32], dtype=np.uint64))
    with pytest.raises(ValueError, match="negative"):
        c.encode(np.array([-1, 3]))
    with pytest.raises(TypeError, match="dtype float64"):
        c.encode(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="mixed"):
        c.encode([1, "a"])
    with pytest.raises(TypeError, match=r"items\[1\]"):
        c.encode(np.array([1, 2.5], dtype=object))
    with pytest.raises(TypeError, match="dtype bool"):
        c.encode(np.array([True, False]))
    with pytest.raises(TypeError):
        c.encode("abc")
    with pytest.raises(ValueError, match="1-D"):
        c.encode(np.zeros((2, 2), dtype=np.int64))
    assert c.encode([]).size == 0


def test_strings_are_big_endian_padded_prefixes():
    c = codec(max_length=4)
    assert c.item_type == "str" and c.item_bits == 32
    v = c.encode(["ab", "abc", b"ab\xff"]).tolist()
    assert v[0] == int.from_bytes(b"ab\0\0", "big")
    assert v[0] >> 16 == v[1] >> 16  # a common string prefix is a common integer prefix
    out = c.decode(np.array(v, dtype=np.uint64), {})
    assert out[:2] == ["ab", "abc"] and out[2] == b"ab\xff"  # not UTF-8: bytes
    assert c.decode(np.array(v[:1], dtype=np.uint64), {}, decode=False) == [b"ab"]
    assert c.encode(["é"]).tolist() == [int.from_bytes("é".encode() + b"\0\0", "big")]


def test_string_errors_name_position_not_value():
    c = codec(max_length=4)
    secret = "s3cr3tlong"
    with pytest.raises(ValueError, match=r"items\[1\] is longer than 4 bytes") as e:
        c.encode(["ok", secret])
    assert secret not in str(e.value)
    with pytest.raises(ValueError, match=r"items\[0\] contains a NUL"):
        c.encode(["a\0b"])
    with pytest.raises(TypeError, match=r"items\[1\].*mixed"):
        c.encode(["a", 3])
    with pytest.raises(TypeError):
        c.encode(np.array([1, 2]))
    with pytest.raises(TypeError, match="single str"):
        c.encode("abc")


def test_options_validated():
    with pytest.raises(ValueError, match="item_bits"):
        HeavyHitters("pem", 4.0, item_bits=65)
    assert HeavyHitters("pem", 4.0, max_length=64).codec.item_type == "str"  # long strings by default
    with pytest.raises(ValueError, match="max_length"):
        HeavyHitters("pem", 4.0, max_length=256)
    with pytest.raises(ValueError, match="multiple of 8"):
        HeavyHitters("pem", 4.0, item_bits=12, item_type="str")
    with pytest.raises(TypeError, match="max_length"):
        HeavyHitters("pem", 4.0, item_type="int", max_length=4)
    with pytest.raises(ValueError, match="long_items"):
        HeavyHitters("pem", 4.0, max_length=4, long_items="truncate")
    with pytest.raises(ValueError, match="method"):
        HeavyHitters("nope", 4.0)
    with pytest.raises(TypeError, match="no option"):
        HeavyHitters("pem", 4.0, bogus=1)
    with pytest.raises(ValueError, match="epsilon"):
        HeavyHitters("pem", -1.0)


def test_long_items_hashed_and_named_by_candidates():
    hh = HeavyHitters("pem", 8.0, max_length=4, long_items="hash", k=2, k_prime=256)
    c = hh.codec
    long_word = "a-much-longer-item"
    code = c.encode([long_word])[0]
    assert int(code) == int.from_bytes(long_item_digest(long_word.encode(), 4), "big")
    # users: 60% hold the long item, 40% "ab"; recovered by the tree search, named by the dictionary
    items = [long_word] * 3000 + ["ab"] * 2000
    rng = dpnoise.default_rng(5)
    rep = hh.client(rng, allow_insecure=True).privatize(items)
    named = hh.aggregator(candidates=[long_word, "zz"]).add(rep).top(2)
    assert [r.item for r in named] == [long_word, "ab"]
    unnamed = hh.aggregator().add(rep).top(2)
    assert unnamed[0].item != long_word and unnamed[1].item == "ab"
