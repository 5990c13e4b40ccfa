"""Rows of records with conversions to pandas and Arrow, each imported only when asked for."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List


class Table:
    """A list of rows (dicts of one record each) that converts to a pandas DataFrame
    (:meth:`to_pandas`) or a pyarrow Table (:meth:`to_arrow`); nested values (a call's
    messages, a run's spec) stay dicts and lists."""

    def __init__(self, rows: List[Dict[str, Any]]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(self.rows)

    def __getitem__(self, i: int) -> Dict[str, Any]:
        return self.rows[i]

    def __repr__(self) -> str:
        return f"moot.Table({len(self.rows)} rows)"

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (needs ``pandas``)."""
        try:
            import pandas
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_pandas needs pandas: pip install pandas") from e
        return pandas.DataFrame.from_records(self.rows)

    def to_arrow(self) -> Any:
        """The rows as a pyarrow Table (needs ``pyarrow``)."""
        try:
            import pyarrow
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_arrow needs pyarrow: pip install pyarrow") from e
        return pyarrow.Table.from_pylist(self.rows)
