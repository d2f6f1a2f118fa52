"""Execute notebooks headless in a real kernel and write HTML with their outputs.

    python -m jitmagic.notebook.demos demo_notebooks demo_notebooks/html

Every notebook in the folder runs with nbclient in an IPython kernel started from this very
interpreter (no kernelspec needs installing); the HTML comes from nbconvert. The exit status
is nonzero when any cell produced an error output.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

KERNEL_NAME = "jitmagic-python"


def kernel_manager():
    """A KernelManager whose kernel is `sys.executable -m ipykernel_launcher`, with this
    checkout's jitmagic importable."""
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    d = Path(tempfile.mkdtemp(prefix="jitmagic-kernel-")) / KERNEL_NAME
    d.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({sys.executable})",
        "language": "python",
    }
    (d / "kernel.json").write_text(json.dumps(spec))
    root = str(Path(__file__).resolve().parent.parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    ksm = KernelSpecManager(kernel_dirs=[str(d.parent)])
    return KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=ksm), env


def error_outputs(nb):
    """(cell index, 'Ename: evalue') for every error output in an executed notebook."""
    out = []
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                out.append((i, f"{o.get('ename')}: {o.get('evalue')}"))
    return out


def execute(path, timeout=300):
    """Run one notebook; returns (executed notebook, errors, seconds)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    km, env = kernel_manager()
    client = NotebookClient(
        nb,
        km=km,
        timeout=timeout,
        allow_errors=True,
        resources={"metadata": {"path": str(Path(path).parent)}},
    )
    t0 = time.perf_counter()
    client.execute(env=env)
    return nb, error_outputs(nb), time.perf_counter() - t0


def to_html(nb, dest):
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nb)
    Path(dest).write_text(body, encoding="utf-8")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m jitmagic.notebook.demos NOTEBOOK_DIR HTML_DIR", file=sys.stderr)
        return 2
    src, dst = Path(argv[0]), Path(argv[1])
    books = sorted(src.glob("*.ipynb"))
    if not books:
        print(f"no notebooks in {src}", file=sys.stderr)
        return 2
    dst.mkdir(parents=True, exist_ok=True)
    failed = 0
    for book in books:
        nb, errors, secs = execute(book)
        html = dst / (book.stem + ".html")
        to_html(nb, html)
        status = "ok" if not errors else f"{len(errors)} error output(s)"
        print(f"{book.name}: {status} in {secs:.1f} s -> {html}")
        for i, err in errors:
            print(f"  cell {i}: {err}")
        failed += bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
