import numpy as np

from verify.token_diff import char_offset, first_difference, token_byte_offsets


def arr(*xs):
    return np.array(xs, dtype=np.uint32)


def test_identical_arrays_have_no_difference():
    assert first_difference(arr(1, 2, 3), arr(1, 2, 3)) is None
    assert first_difference(arr(), arr()) is None


def test_first_differing_position():
    assert first_difference(arr(1, 2, 3, 4), arr(1, 2, 9, 4)) == 2
    assert first_difference(arr(5), arr(6)) == 0


def test_prefix_differs_at_the_shorter_length():
    assert first_difference(arr(1, 2, 3), arr(1, 2)) == 2
    assert first_difference(arr(1, 2), arr(1, 2, 3)) == 2


def test_byte_offsets_accumulate_piece_lengths():
    assert token_byte_offsets([b"ab", b"c", b"\xc3\xa9"]).tolist() == [0, 2, 3, 5]


def test_char_offset_counts_code_points_not_bytes():
    text = "aé日b".encode()
    assert char_offset(text, 0) == 0
    assert char_offset(text, 1) == 1
    assert char_offset(text, 3) == 2  # after 'a' (1 byte) and 'é' (2 bytes)
    assert char_offset(text, 6) == 3
    assert char_offset(text, 4) == 2  # inside '日': the char that contains it
