"""Tables for bench/README.md from the JSON lines of bench/run_all.sh.

    python bench/summarize.py bench/results/run-1      (reads ours.jsonl and peers.jsonl there)

Prints markdown: our runs, the peer runs, and the comparison (ours ÷ best peer run of each
system for step transitions/s; our CPU per step transition ÷ the peer's, higher is worse;
the peer's serial p50 beside our lone-workflow p50).
CPU per transition of a peer subtracts the fixed cost measured by its ``-fixed`` run
(N=5: imports, schema, warm-up) from the same round.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def load(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().startswith("{")]


def f(v, nd=1) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def load1(s: str | None) -> str:
    return (s or "").split(" ")[0] or "–"


def ours_label(o: dict) -> str:
    server = o["server"].replace("ASGI_THREADS=", "ASGI_THREADS ").replace("x", "×", 1)
    return f"{o['db']}, {server}, M={o['workers']}"


def peer_rounds(peers: list[dict]) -> list[dict]:
    """Add ``cpu_ms`` (fixed cost removed) and ``round`` to each peer run."""
    rounds: dict[str, int] = {}
    fixed: dict[tuple[int, str], dict] = {}
    out = []
    for o in peers:
        label = o["run"]
        base = label[: -len("-fixed")] if label.endswith("-fixed") else label
        if label.endswith("-fixed"):
            rnd = rounds.get(base, 0) + 1  # the fixed run precedes its full run in the same round
            fixed[(rnd, base)] = o
            continue
        rnd = rounds[base] = rounds.get(base, 0) + 1
        o = dict(o, round=rnd)
        cpu = o.get("cpu") or {}
        steps = o["n"] * o["steps"]
        fx = fixed.get((rnd, base))
        if cpu and fx and fx.get("cpu"):
            fsteps = fx["n"] * fx["steps"]
            o["cpu_ms"] = round(1000 * (cpu["total_s"] - fx["cpu"]["total_s"]) / (steps - fsteps), 2)
        elif cpu:
            o["cpu_ms"] = cpu.get("total_ms_per_transition")
        out.append(o)
    return out


def main() -> None:
    d = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    ours = load(d / "ours.jsonl")
    peers = peer_rounds(load(d / "peers.jsonl"))

    print("### Our server\n")
    print("| set-up | wf/s | task transitions/s | latency p50 / p99 (ms) | lone p50 client / server (ms) "
          "| CPU ms per transition (all / server / PostgreSQL) | idle-poll server CPU % | load | ok |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for o in ours:
        lat, lone, cpu = o["lat_create_to_end_ms"], o["lone"], o.get("cpu_main_run") or {}
        ok = "yes" if o["completed"] == o["n"] and not o["bad"] else f"{o['completed']}/{o['n']}, bad {o['bad']}"
        print(f"| {ours_label(o)} | {f(o['workflows_per_s'])} | {f(o['step_transitions_per_s'])} "
              f"| {f(lat['p50'], 0)} / {f(lat['p99'], 0)} | {f(lone['client_ms']['p50'])} / {f(lone['server_ms']['p50'], 0)} "
              f"| {f(cpu.get('total_ms_per_transition'))} / {f(cpu.get('server_ms_per_transition'))} / "
              f"{f(cpu.get('postgres_ms_per_transition'))} | {f(o.get('idle_server_cpu_pct'))} "
              f"| {load1(o.get('loadavg_before'))} | {ok} |")

    print("\n### Peers\n")
    print("| run | round | wf/s | step transitions/s | latency p50 / p99 (ms) | CPU ms per transition | load |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for o in peers:
        lat = o["lat_submit_to_done_ms"]
        print(f"| {o['run']} | {o['round']} | {f(o['workflows_per_s'])} | {f(o['step_transitions_per_s'])} "
              f"| {f(lat['p50'])} / {f(lat['p99'])} | {f(o.get('cpu_ms'))} | {load1(o.get('loadavg_before'))} |")

    # comparison: best run of each peer system (throughput modes) vs our best PostgreSQL run
    # the product's server is daphne; the other set-ups are listed above for comparison only
    pg = [o for o in ours if o["db"] == "postgres" and o["completed"] == o["n"] and not o["bad"]
          and o["server"].startswith("daphne")]
    if not pg or not peers:
        return
    best = max(pg, key=lambda o: o["step_transitions_per_s"])
    cheapest = min(pg, key=lambda o: (o.get("cpu_main_run") or {}).get("total_ms_per_transition") or 1e9)
    lone_best = min(pg, key=lambda o: o["lone"]["client_ms"]["p50"] or 1e9)
    systems: dict[str, list[dict]] = {}
    for o in peers:
        systems.setdefault(o["system"], []).append(o)
    print(f"\n### Ours (PostgreSQL, daphne) ÷ peers\n")
    print(f"Ours: best throughput {best['step_transitions_per_s']} transitions/s ({ours_label(best)}); "
          f"lowest CPU {(cheapest.get('cpu_main_run') or {}).get('total_ms_per_transition')} ms/transition "
          f"({ours_label(cheapest)}); best lone p50 {lone_best['lone']['client_ms']['p50']} ms ({ours_label(lone_best)}).\n")
    print("| peer | best step transitions/s (run) | ours ÷ peer, transitions/s | peer CPU ms/transition "
          "| ours ÷ peer, CPU per transition | peer serial p50 (ms) |")
    print("|---|---:|---:|---:|---:|---:|")
    ours_cpu = (cheapest.get("cpu_main_run") or {}).get("total_ms_per_transition")
    for system, runs in systems.items():
        thr = [r for r in runs if "serial" not in r["run"]]
        ser = [r for r in runs if "serial" in r["run"]]
        if not thr:
            continue
        b = max(thr, key=lambda r: r["step_transitions_per_s"])
        cpus = [r["cpu_ms"] for r in thr if r.get("cpu_ms")]
        cpu = min(cpus) if cpus else None
        serial = min((r["lat_submit_to_done_ms"]["p50"] for r in ser), default=None)
        print(f"| {system} | {b['step_transitions_per_s']} ({b['run']}, round {b['round']}) "
              f"| {best['step_transitions_per_s'] / b['step_transitions_per_s']:.2f} "
              f"| {f(cpu, 2)} | {f(ours_cpu / cpu if cpu and ours_cpu else None, 1)} | {f(serial)} |")


if __name__ == "__main__":
    main()
