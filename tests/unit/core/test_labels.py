"""Phase-table labels in a narrow column: shortened alike, still telling the rows apart."""

from __future__ import annotations

from abtui.core.labels import fit_labels, short_names, short_value

# the rows of seed 606's walk that read the same at 80×24 when their ends were cut
ROWS = [
    [],
    [("cc", "reno"), ("tcp_rmem", "4096 131072 6291456"), ("tcp_wmem", "4096 16384 65536")],
    [("cc", "reno"), ("tcp_rmem", "4096 8192 16384"), ("tso", "off"), ("tunnel", "wireguard")],
    [("tcp_rmem", "4096 131072 6291456"), ("tcp_wmem", "4096 16384 65536")],
    [("tcp_rmem", "4096 131072 6291456"), ("tso", "off")],
    [("tcp_rmem", "4096 8192 16384"), ("tcp_wmem", "4096 16384 65536"), ("tso", "off")],
    [("cc", "reno")],
]


def test_labels_that_fit_are_left_whole() -> None:
    shown = fit_labels(ROWS, 200)
    assert shown[0] == "initial"
    assert shown[1] == "cc=reno, tcp_rmem=4096 131072 6291456, tcp_wmem=4096 16384 65536"


def test_narrow_labels_fit_and_stay_distinct() -> None:
    for width in (60, 35, 24, 16):
        shown = fit_labels(ROWS, width)
        assert all(len(x) <= width for x in shown), (width, shown)
        assert len(set(shown)) == len(shown), (width, shown)


def test_short_forms_keep_what_tells_a_row_apart() -> None:
    shown = fit_labels(ROWS, 35)
    # every row shortened the same way: short knob names, binary units
    assert shown[4] == "rmem=4K 128K 6M,tso=off"
    # the one row with a tunnel keeps it, the knobs others share left out as …
    assert "tunnel=wireguard" in shown[2] and "…" in shown[2]
    assert shown[6] == "cc=reno" and shown[1].startswith("cc=reno,") and "…" in shown[1]


def test_short_names_and_values() -> None:
    assert short_names(["tcp_rmem", "tcp_wmem", "cc", "x_cc"]) == {
        "tcp_rmem": "rmem", "tcp_wmem": "wmem", "cc": "cc", "x_cc": "x_cc"}
    assert short_names(["a.rmem", "b.rmem"]) == {"a.rmem": "a.rmem", "b.rmem": "b.rmem"}
    assert short_value("4096 131072 6291456") == "4K 128K 6M"
    assert short_value("1000 1025 2.048 reno/bbr") == "1000 1025 2.048 reno/bbr"
    assert short_value(str(3 << 30)) == "3G"


def test_a_column_too_narrow_for_any_knob_numbers_the_rows() -> None:
    rows = [[("tunnel", "wireguard-go-very-long")], [("tunnel", "wireguard-go-very-lang")]]
    shown = fit_labels(rows, 12)
    assert len(set(shown)) == 2 and all(len(x) <= 12 for x in shown)
    assert shown[0].startswith("1 ") and shown[1].startswith("2 ")
