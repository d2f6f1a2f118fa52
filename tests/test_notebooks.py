"""Execute every demo notebook in a real kernel (nbclient) and fail on any error output."""

from pathlib import Path

import pytest

pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from jitmagic.notebook import demos

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "demo_notebooks").glob("*.ipynb"))


def test_there_are_demo_notebooks():
    assert len(NOTEBOOKS) >= 3


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_without_errors(path, tmp_path):
    nb, errors, seconds = demos.execute(path, timeout=240)
    assert errors == [], f"{path.name}: error outputs in cells {errors}"
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert outputs, "the notebook produced no output at all"
    for o in outputs:  # every rich output also reads as plain text
        if "data" in o:
            assert "text/plain" in o["data"], o["data"].keys()
    demos.to_html(nb, tmp_path / (path.stem + ".html"))
    assert (tmp_path / (path.stem + ".html")).stat().st_size > 10_000
