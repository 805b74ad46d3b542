"""Rebuilds corpus/ of the ISSUE-48 round-4 probes: three of Node.js's API pages as this
machine's nodejs package ships them (copied unchanged, as the dev set's node-os.html is)
and ln(1) from coreutils, rendered as in ../ISSUE-48-probes-r3/build.py (man(1) to text,
each section heading an <h2>, each paragraph a <p>; no words changed)."""

import html
import shutil
import subprocess
from pathlib import Path

NODE = ("child_process", "net", "path")
PAGES = ("ln",)
OUT = Path(__file__).parent / "corpus"


def render(name: str) -> str:
    text = subprocess.run(
        ["man", "-P", "cat", name],
        capture_output=True,
        text=True,
        check=True,
        env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    ).stdout
    text = subprocess.run(
        ["col", "-bx"], check=True, input=text, capture_output=True, text=True
    ).stdout
    parts = [f"<html><head><title>{name}(1)</title></head><body>"]
    para: list[str] = []

    def flush() -> None:
        if para:
            parts.append("<p>" + html.escape(" ".join(para)) + "</p>")
            para.clear()

    for line in text.splitlines()[1:]:
        if not line.strip():
            flush()
        elif not line.startswith(" "):
            flush()
            parts.append("<h2>" + html.escape(line.strip()) + "</h2>")
        else:
            para.append(line.strip())
    flush()
    parts.append("</body></html>")
    return "\n".join(parts)


OUT.mkdir(exist_ok=True)
for page in NODE:
    shutil.copyfile(f"/usr/share/doc/nodejs/api/{page}.html", OUT / f"node-{page}.html")
for page in PAGES:
    (OUT / f"{page}.html").write_text(render(page) + "\n", encoding="utf-8")
