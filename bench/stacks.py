"""Summarise py-spy ``--format raw`` (collapsed stacks) files written by ``bench.py --profile``.

    python bench/stacks.py PROFILE_DIR/*.txt [--top 40] [--focus SUBSTRING]

Prints, over all samples of all given files (active samples only: bench.py records
without ``--idle``): the functions with the most inclusive samples (the function is
somewhere on the stack) and the most self samples (the leaf frame), as % of samples.
``--focus`` keeps only the stacks that contain SUBSTRING (e.g. ``update_task_v2``) and
gives percentages of those.
"""
from __future__ import annotations

import argparse
import re
from collections import Counter

FRAME_RE = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def short(frame: str) -> str:
    """``func (path/to/site-packages/pkg/mod.py:12)`` -> ``func (pkg/mod.py)``."""
    m = FRAME_RE.match(frame.strip())
    if not m:
        return frame.strip()
    path = m.group("file")
    for marker in ("site-packages/", "/work/main/", "lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{m.group('func')} ({path})"


def load(paths: list[str], focus: str | None) -> tuple[Counter, Counter, int]:
    incl: Counter = Counter()
    self_: Counter = Counter()
    total = 0
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line:
                    continue
                stack, _, n = line.rpartition(" ")
                try:
                    count = int(n)
                except ValueError:
                    continue
                if focus and focus not in stack:
                    continue
                frames = [short(fr) for fr in stack.split(";")
                          if fr and not fr.startswith("process ") and not fr.startswith("thread ")]
                if not frames:
                    continue
                total += count
                for fr in set(frames):
                    incl[fr] += count
                self_[frames[-1]] += count
    return incl, self_, total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--focus")
    a = p.parse_args()
    incl, self_, total = load(a.files, a.focus)
    if not total:
        print("no samples")
        return
    print(f"{total} samples" + (f" containing {a.focus!r}" if a.focus else ""))
    print("\n-- inclusive --")
    for fr, n in incl.most_common(a.top):
        print(f"{100 * n / total:6.1f}%  {fr}")
    print("\n-- self --")
    for fr, n in self_.most_common(a.top):
        print(f"{100 * n / total:6.1f}%  {fr}")


if __name__ == "__main__":
    main()
