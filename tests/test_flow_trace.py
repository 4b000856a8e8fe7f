"""`slacknet.trace_flow` and `slacknet trace`: one transfer's packets, from its sends to their drops or arrivals."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import slacknet
from slacknet.cli import main

# Incast into 30 KB static ports: responses lose packets and time out.
LOSSY = """
name = "trace_lossy"
seed = 3
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 8
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 10
[switch]
admission = { policy = "static", port_bytes = 30000 }
[transport]
kind = "dctcp"
sack = true
min_rto_us = 1000
[[workload]]
kind = "incast"
query_rate_per_host = 2000
fan_in = 7
burst_bytes = 300000
duration_ms = 1
"""


@pytest.fixture(scope="module")
def lossy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    p = tmp_path_factory.mktemp("trace") / "lossy.toml"
    p.write_text(LOSSY)
    return p, slacknet.run(p).records


def test_a_timed_out_flow_shows_its_drops_timeouts_and_retransmissions(lossy: tuple[Path, pd.DataFrame]) -> None:
    path, records = lossy
    rec = records[(records.num_rtos > 0) & records.finished].iloc[0]
    df = slacknet.trace_flow(path, int(rec.id))
    assert df.attrs == {"flow": int(rec.id), "truncated": False}
    assert set(df.event.unique()) <= {"send", "enqueue", "drop", "receive", "timeout"}
    assert df.time_ps.is_monotonic_increasing
    assert (df.event == "timeout").sum() == rec.num_rtos
    data = df[(df.event == "send") & df.to_receiver & (df.len > 0)]
    assert len(data) - data.seq.nunique() == rec.retx_segments
    assert (data.seq + data.len).max() == rec.size_bytes
    drops = df[df.event == "drop"]
    assert len(drops) > 0 and (drops.cause != "").all() and (df[df.event != "drop"].cause == "").all()
    # A static port drops what does not fit in its 30 KB.
    adm = drops[drops.cause == "admission"]
    assert ((adm.queue_bytes + adm["size"]) > 30_000).all()
    # Every packet a host sends enters its NIC first (switch -1).
    for to_rx in (True, False):
        sends = ((df.event == "send") & (df.to_receiver == to_rx)).sum()
        nic = (df.event.isin(["enqueue", "drop"]) & (df.switch == -1) & (df.to_receiver == to_rx)).sum()
        assert sends == nic > 0
    # The sender's own rows carry its window.
    assert (data.cwnd_bytes > 0).all()


def test_the_same_run_gives_the_same_trace(lossy: tuple[Path, pd.DataFrame]) -> None:
    # (That tracing changes nothing in the run is the Rust test's `flowtrace` check.)
    path, records = lossy
    a = slacknet.trace_flow(path, int(records.id.iloc[1]))
    b = slacknet.trace_flow(path, int(records.id.iloc[1]))
    pd.testing.assert_frame_equal(a, b)
    assert len(a) > 0


@pytest.mark.parametrize("flow", [-1, True, "3", 2**64, 1.0])
def test_a_bad_flow_is_one_error_naming_it(lossy: tuple[Path, pd.DataFrame], flow: object) -> None:
    with pytest.raises(slacknet.SpecError) as e:
        slacknet.trace_flow(lossy[0], flow)  # type: ignore[arg-type]
    assert e.value.key == "flow" and "records' id" in str(e.value)


def test_an_id_no_transfer_has_is_refused_after_the_run(lossy: tuple[Path, pd.DataFrame]) -> None:
    path, records = lossy
    missing = int(records.id.max()) + 1000
    with pytest.raises(slacknet.SpecError) as e:
        slacknet.trace_flow(path, missing)
    assert e.value.key == "flow" and f"{len(records)} transfers" in str(e.value)


def test_cli_trace_writes_the_rows_and_prints_what_happened(
    lossy: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, records = lossy
    rec = records[records.num_rtos > 0].iloc[0]
    out = tmp_path / "t.csv"
    assert main(["trace", str(path), "--flow", str(int(rec.id)), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    df = pd.read_csv(out)
    assert len(df) == len(slacknet.trace_flow(path, int(rec.id)))
    assert f"timeouts          {int(rec.num_rtos)}" in text and "drops" in text
    # A bad id: one error, exit code 2, nothing written.
    bad = tmp_path / "bad.csv"
    assert main(["trace", str(path), "--flow", "999999", "--out", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: flow") and "999999" in err and not bad.exists()
    # A file of the user's at --out is never replaced.
    mine = tmp_path / "mine.csv"
    mine.write_text("a,b\n1,2\n")
    assert main(["trace", str(path), "--flow", str(int(rec.id)), "--out", str(mine)]) == 2
    assert mine.read_text() == "a,b\n1,2\n"
    # A name that says another format is refused, not written as CSV.
    assert main(["trace", str(path), "--flow", str(int(rec.id)), "--out", str(tmp_path / "t.xlsx")]) == 2
    assert "name the file *.csv or *.parquet" in capsys.readouterr().err and not (tmp_path / "t.xlsx").exists()
    # Writing again over its own trace is fine.
    assert main(["trace", str(path), "--flow", str(int(rec.id)), "--out", str(out)]) == 0
