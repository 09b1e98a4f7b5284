#!/usr/bin/env python3
"""Agreement of Souz's readable-text extraction with trafilatura's (issue 18).

For each saved page in crates/core/tests/fixtures/web/pages (real pages of the Rust
documentation, with their navigation, sidebars and scripts), compares the text Souz extracts
(`WebPageText`'s extractor: dom_smoothie, a port of Mozilla's Readability, as Markdown; run
through the `extract_text` example) with trafilatura's, an independent extractor from PyPI.

Agreement is the token-set F1 of the two texts: words (Unicode \\w+, lower case) as sets,
precision = shared / Souz's, recall = shared / trafilatura's. Markdown syntax is removed from
Souz's text first (link and image targets, so a URL does not count as extracted words).

Run after `bash scripts/clients.sh` (installs trafilatura into tests/clients/.venv):
    tests/clients/.venv/bin/python scripts/extraction_agreement.py
Prints one line per page and the mean and median F1; exits 1 if trafilatura is missing.
SOUZ_EXTRACT_TEXT=<path of a built extract_text example> skips `cargo run`.
"""

import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "crates/core/tests/fixtures/web/pages"
WORD = re.compile(r"\w+", re.UNICODE)
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def souz_texts(pages):
    built = os.environ.get("SOUZ_EXTRACT_TEXT")
    if built:
        command = [built, *[str(page) for page in pages]]
    else:
        command = [
            "cargo", "run", "-q", "-p", "souz-core", "--features", "test-support",
            "--example", "extract_text", "--", *[str(page) for page in pages],
        ]
    output = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(output.stdout)


def tokens(text):
    return set(WORD.findall(text.lower()))


def f1(ours, theirs):
    if not ours and not theirs:
        return 1.0, 1.0, 1.0
    shared = len(ours & theirs)
    precision = shared / len(ours) if ours else 0.0
    recall = shared / len(theirs) if theirs else 0.0
    if precision + recall == 0:
        return precision, recall, 0.0
    return precision, recall, 2 * precision * recall / (precision + recall)


def main():
    try:
        import trafilatura
    except ImportError:
        print("trafilatura is not installed: run `bash scripts/clients.sh` and use "
              "tests/clients/.venv/bin/python", file=sys.stderr)
        return 1
    pages = sorted(PAGES.glob("*.html"))
    souz = souz_texts(pages)
    scores = []
    print(f"{'page':55} {'P':>5} {'R':>5} {'F1':>5}")
    for page in pages:
        html = page.read_text(encoding="utf-8")
        theirs = trafilatura.extract(html, url=f"https://pages.example/{page.name}") or ""
        ours = LINK.sub(r"\1", souz.get(page.name, ""))
        precision, recall, score = f1(tokens(ours), tokens(theirs))
        scores.append(score)
        print(f"{page.name[:55]:55} {precision:5.2f} {recall:5.2f} {score:5.2f}")
    print(f"\n{len(scores)} pages: mean F1 {statistics.mean(scores):.3f}, "
          f"median F1 {statistics.median(scores):.3f}, min {min(scores):.3f}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("CARGO_TERM_COLOR", "never")
    sys.exit(main())
