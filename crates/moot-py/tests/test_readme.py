"""The README's Python example and examples/python/notebook.py run as written."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_readme_python_example_runs_as_written(tmp_path, monkeypatch, capsys):
    text = (ROOT / "README.md").read_text()
    start = text.index("```python\nimport asyncio, json, moot\n") + len("```python\n")
    example = text[start : text.index("```\n", start)]
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "408" in out
    assert (tmp_path / "runs.db").exists()


def test_the_notebook_example_runs_and_writes_its_plot_when_matplotlib_is_there(tmp_path):
    plot = tmp_path / "accuracy.svg"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python" / "notebook.py"), str(plot)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "protocol" in done.stdout
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "pip install matplotlib" in done.stdout
    else:
        assert plot.read_text().startswith("<?xml")
