"""Datasets as Hugging Face exports them (issue 47), through ``moot.bench``: nested Parquet
written with pyarrow, a folder of Parquet shards, MMLU's index golds, and GSM-Plus's unscorable
items left out by count. Every fixture is written here for the test."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import moot

TRUTHFUL = {
    "agents": [
        {"id": name, "backend": "sim", "sim": {"accuracy": 1.0}} for name in ("a", "b", "c")
    ]
}


def golds(report):
    return {row["item_id"]: row["gold"] for row in report.results.rows}


def test_arc_shaped_parquet_with_nested_choices(tmp_path, store):
    table = pa.table(
        {
            "id": ["arc-1", "arc-2"],
            "question": ["Which gas do plants take in?", "Which is a mammal?"],
            "choices": [
                {"text": ["oxygen", "carbon dioxide", "helium", "neon"], "label": ["A", "B", "C", "D"]},
                {"text": ["trout", "frog", "whale", "newt"], "label": ["1", "2", "3", "4"]},
            ],
            "answerKey": ["B", "3"],
        }
    )
    path = tmp_path / "arc.parquet"
    pq.write_table(table, path)
    report = moot.bench(
        f"parquet:{path}?kind=choice&options=choices.text&labels=choices.label&answer=answerKey&id=id",
        ["som"],
        rounds=1,
        config=TRUTHFUL,
        name="arc",
        store=store,
    )
    assert golds(report) == {"arc-1": "B", "arc-2": "C"}
    assert report.accuracy() == {"som": 1.0}
    assert len(report.left_out) == 0


def test_mmlu_shards_in_a_folder_read_their_index_golds(tmp_path, store):
    folder = tmp_path / "all"
    folder.mkdir()
    # Written out of order: shards are read in name order.
    pq.write_table(
        pa.table({"question": ["Which is a noble gas?"], "subject": ["chemistry"],
                  "choices": [["argon", "iron", "salt", "wood"]], "answer": [0]}),
        folder / "test-00001-of-00002.parquet",
        compression="zstd",
    )
    pq.write_table(
        pa.table({"question": ["2 + 2 ="], "subject": ["math"],
                  "choices": [["3", "4", "5", "22"]], "answer": [1]}),
        folder / "test-00000-of-00002.parquet",
    )
    report = moot.bench(
        f"parquet:{folder}?kind=choice&options=choices",
        ["som"],
        rounds=1,
        config=TRUTHFUL,
        name="mmlu",
        store=store,
    )
    # Ids count the records of all shards, under the folder's name.
    assert golds(report) == {"all/0": "B", "all/1": "A"}


def test_gsm_plus_none_golds_are_left_out_with_skip_invalid(tmp_path, store):
    data = tmp_path / "gsmplus.jsonl"
    rows = [
        {"question": "Tom has 3 apples and buys 4. How many?", "answer": "7"},
        {"question": "Tom has apples and buys 4. How many?", "answer": "None"},
        {"question": "Ann has 10 pens and loses 2. How many?", "answer": "8"},
    ]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(moot.InputError, match="does not parse as numeric"):
        moot.bench(f"jsonl:{data}?kind=numeric", ["som"], sim=True, store=store)
    report = moot.bench(
        f"jsonl:{data}?kind=numeric", ["som"], sim=True, rounds=1, name="plus",
        skip_invalid=True, store=store,
    )
    left = report.left_out.rows
    assert [(r["bench"], r["id"], r["problem"]) for r in left] == [
        ("plus", "gsmplus/1", "gold does not parse as numeric")
    ]
    assert sorted(golds(report)) == ["gsmplus/0", "gsmplus/2"]


def test_an_error_quoting_a_dataset_file_is_escaped(tmp_path, store):
    # A CSV header is the file's, not the user's: its control characters reach the exception's
    # message (and so a terminal printing the traceback) escaped.
    data = tmp_path / "bad.csv"
    data.write_text("question,\x1b[2Janswer\nq,1\n")
    with pytest.raises(moot.InputError) as caught:
        moot.bench(f"csv:{data}?kind=numeric", ["som"], sim=True, store=store)
    message = str(caught.value)
    assert "no column `answer`" in message
    assert "\x1b" not in message and "\\u{1b}[2Janswer" in message


def test_a_pyarrow_file_whose_row_decompresses_past_the_page_bound_is_refused(tmp_path, store):
    """Issue 57 item 2: a few KB of zstd Parquet whose one question is 70 MB of one letter is
    refused before it is decompressed, naming the file and the bound."""
    path = tmp_path / "bomb.parquet"
    pq.write_table(
        pa.table({"question": ["a" * (70 << 20)], "answer": [1]}),
        path,
        compression="zstd",
        use_dictionary=False,
    )
    assert path.stat().st_size < (1 << 20)
    with pytest.raises(moot.MootError) as refused:
        moot.bench(f"parquet:{path}?kind=numeric", ["som"], rounds=1, config=TRUTHFUL,
                   name="bomb", store=store)
    message = str(refused.value)
    assert "bomb.parquet" in message and "over the 67108864 a page may" in message, message[:2000]
