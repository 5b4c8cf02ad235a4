"""Tables for bench/README.md from the JSON lines of bench/run_all.sh and the other steps of
`make bench`.

    python bench/summarize.py bench/results/run-1

Reads, in that directory: ours.jsonl and peers.jsonl (bench/run_all.sh), oss.jsonl and
oss-idle.jsonl (bench/run_oss.sh: Conductor OSS, listed as a peer), and when present
idle.jsonl (bench/idle.py), growth.jsonl (bench/growth.py), memory.jsonl (bench/memory.py) and
overview.jsonl (bench/overview.py: the Overview page's queries at 1,000,000 executions).
Prints markdown: our runs, the peer runs, the comparison (ours ÷ best peer run of each
system for step transitions/s; our CPU per step transition ÷ the peer's, higher is worse;
the peer's serial p50 beside our lone-workflow p50), then one table of the targets of issues #9 and #25:
each measured figure, the bound it is compared with (taken from the same directory, i.e.
the same run) and "met" / "not met", and the memory of each process.
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


# issue #9's targets, as issue #25 restated them
THROUGHPUT_X = 2.0          # ours >= 2x the best peer's task transitions/s
GROWTH_X = 1.5              # per-update cost at 2,000 tasks <= 1.5x the cost at 10
IDLE_PCT = 2.0              # server CPU, % of one core, 20 workers long-polling empty queues (timeout >= 1 s)
IDLE_SHORT_PCT = 5.0        # ... on the SDK's default 100 ms poll (issue #25; also below Conductor OSS's figure)
WAKE_MS = 50.0              # a queued task reaches a waiting long poll in another process
MEMORY_MB = 400.0           # the embedded server at rest
STABLE_PCT = 5.0            # "stable" (our reading): no process's RSS grows more than this, in %,
                            # over the second half of the run (a leak keeps growing; a high-water mark does not)
STABLE_RUN = 100_000        # ... of this many task transitions
OVERVIEW_MS = 500.0         # the Overview page's data (all its queries; median of 5) at 1,000,000 executions (#30)
DURABLE_PEERS = ("dbos", "procrastinate", "conductor-oss")   # Celery+Redis is not durable


def oss_peers(d: Path) -> list[dict]:
    """Conductor OSS's bench.py runs (oss.jsonl, bench/run_oss.sh) as peer runs: one
    throughput run per store (``conductor-oss-postgres``, ``conductor-oss-sqlite``) and its
    lone-workflow p50 as that store's ``-serial`` run (one workflow at a time, as the
    peers' serial modes). CPU per transition counts the JVM, the workers and, on
    PostgreSQL, the cluster, as for ours."""
    out = []
    for o in load(d / "oss.jsonl"):
        run = f"conductor-oss-{o['db']}"
        ok = o["completed"] == o["n"] and not o["bad"]
        cpu = (o.get("cpu_main_run") or {}).get("total_ms_per_transition")
        base = {"system": "conductor-oss", "round": 1, "n": o["n"], "steps": o["steps"],
                "loadavg_before": o.get("loadavg_before")}
        if ok:
            out.append({**base, "run": run, "workflows_per_s": o["workflows_per_s"],
                        "step_transitions_per_s": o["step_transitions_per_s"],
                        "lat_submit_to_done_ms": o["lat_submit_to_done_ms"], "cpu_ms": cpu})
        if o["lone"]["client_ms"].get("p50") is not None:
            out.append({**base, "run": run + "-serial", "workflows_per_s": None, "step_transitions_per_s": None,
                        "lat_submit_to_done_ms": o["lone"]["client_ms"], "cpu_ms": None})
    return out


def verdict(ok: bool | None) -> str:
    return "–" if ok is None else ("**met**" if ok else "not met")


def product_server(o: dict, ours: list[dict]) -> bool:
    """A run on the product's server: conductor-web (``python -m conductor_web.serve``); in
    result files without any conductor-web run (measured before 2026-12-07), daphne, which
    served then (later files may hold daphne runs for comparison only)."""
    name = "conductor-web" if any(x["server"].startswith("conductor-web") for x in ours) else "daphne"
    return o["server"].startswith(name)


def our_pg(ours: list[dict]) -> list[dict]:
    """Our complete PostgreSQL runs on the product's server."""
    return [o for o in ours if o["db"] == "postgres" and o["completed"] == o["n"] and not o["bad"]
            and product_server(o, ours)]


def targets(d: Path, ours: list[dict], peers: list[dict]) -> None:
    """The table of issue #9's targets: | target | measured | bound (this run) | met? |."""
    rows: list[tuple[str, str, str, bool | None]] = []
    pg = our_pg(ours)
    thr = [p for p in peers if "serial" not in p["run"]]

    # 1-3: throughput, cost, latency (ours and the peers of this run)
    if pg and thr:
        o = max(pg, key=lambda o: o["step_transitions_per_s"])
        b = max(thr, key=lambda p: p["step_transitions_per_s"])
        bound = THROUGHPUT_X * b["step_transitions_per_s"]
        lite = [x for x in ours if x["db"] == "sqlite" and product_server(x, ours)
                and x["completed"] == x["n"] and not x["bad"]]
        beside = max(lite, key=lambda x: x["step_transitions_per_s"]) if lite else None
        rows.append(("Throughput: task transitions/s, PostgreSQL, the product's server",
                     f"{o['step_transitions_per_s']} ({ours_label(o)})"
                     + (f"; SQLite beside it: {beside['step_transitions_per_s']} ({ours_label(beside)})" if beside else ""),
                     f"≥ {bound:.1f} = {THROUGHPUT_X:g} × {b['step_transitions_per_s']} ({b['run']}, round {b['round']})",
                     o["step_transitions_per_s"] >= bound))
    cpu_of = lambda o: (o.get("cpu_main_run") or {}).get("total_ms_per_transition")  # noqa: E731
    ours_cpu = [o for o in pg if cpu_of(o)]
    peer_cpu = [p for p in thr if p.get("cpu_ms")]
    if ours_cpu and peer_cpu:
        o = min(ours_cpu, key=cpu_of)
        b = min(peer_cpu, key=lambda p: p["cpu_ms"])
        c = o["cpu_main_run"]
        rows.append(("Cost: CPU ms per transition (server + database + workers)",
                     f"{cpu_of(o)} (server {f(c.get('server_ms_per_transition'))}, PostgreSQL "
                     f"{f(c.get('postgres_ms_per_transition'))}, workers {f(c.get('client_ms_per_transition'))}; "
                     f"{ours_label(o)})",
                     f"≤ {b['cpu_ms']} ({b['run']}, round {b['round']})", cpu_of(o) <= b["cpu_ms"]))
    serial = [p for p in peers if "serial" in p["run"] and p["system"] in DURABLE_PEERS
              and p["lat_submit_to_done_ms"].get("p50") is not None]
    lone = [o for o in pg if o["lone"]["client_ms"]["p50"] is not None]
    if lone and serial:
        o = min(lone, key=lambda o: o["lone"]["client_ms"]["p50"])
        b = min(serial, key=lambda p: p["lat_submit_to_done_ms"]["p50"])
        p50, bound = o["lone"]["client_ms"]["p50"], b["lat_submit_to_done_ms"]["p50"]
        rows.append(("Latency: lone 3-task workflow p50, client (PostgreSQL, the product's server)",
                     f"{p50} ms (server {f(o['lone']['server_ms']['p50'], 0)} ms; {ours_label(o)})",
                     f"≤ {bound} ms ({b['run']}, round {b['round']}: best durable peer's serial p50)", p50 <= bound))

    # 4: growth (bench/growth.py)
    names = {"loop": "DO_WHILE", "fork": "dynamic fork"}
    for g in load(d / "growth.jsonl"):
        ok = g["ratio"] <= GROWTH_X and g["ratio_median"] <= GROWTH_X and g["status"] == "COMPLETED"
        rows.append((f"Growth: {names.get(g['growth'], g['growth'])} per-update CPU, {g['n']} tasks ÷ {g['window']} "
                     f"({g['db']}, in process)",
                     f"{g['ratio']:.2f}× (mean {g['start_ms']:.2f} → {g['end_ms']:.2f} ms); median {g['ratio_median']:.2f}×"
                     + ("" if g["status"] == "COMPLETED" else f"; execution {g['status']}"),
                     f"≤ {GROWTH_X}× by mean and median" + ("" if g["n"] >= 2000 else "; the target is for 2,000"),
                     ok if g["n"] >= 2000 else None))

    # 4b: the Overview page's data at 1,000,000 executions (bench/overview.py)
    for o in load(d / "overview.jsonl"):
        if o["overview"] == "page":
            rows.append((f"Overview: the page's data, {o['range']} range, {o['executions']:,} executions ({o['db']}, in process)",
                         f"{o['ms_median']} ms median, {o['ms_max']} ms worst of the repeats",
                         f"median ≤ {OVERVIEW_MS} ms" + ("" if o["executions"] >= 1_000_000 else "; the target is for 1,000,000"),
                         o["ms_median"] <= OVERVIEW_MS if o["executions"] >= 1_000_000 else None))

    # 5: idle and wake (bench/idle.py)
    for run in load(d / "idle.jsonl"):
        for i in run["idle"]:
            bound = IDLE_PCT if i["timeout_ms"] >= 1000 else IDLE_SHORT_PCT
            poll = f"{i['timeout_ms'] / 1000:g} s long poll" if i["timeout_ms"] >= 1000 else \
                f"{i['timeout_ms']} ms poll" + (", the SDK's default" if i["timeout_ms"] == 100 else "")
            rows.append((f"Idle: server CPU, {run['workers']} workers, {poll} ({run['db']})",
                         f"{i['idle_server_cpu_pct']} % of a core ({i['polls_per_s']} polls/s, "
                         f"{i['server_cpu_ms_per_poll']} ms/poll)",
                         f"≤ {bound:g} %", i["idle_server_cpu_pct"] <= bound))
        if run.get("wakes"):
            rows.append((f"Idle: cross-process wake, p50 / max ({run['db']}, {run['wakes']} wakes)",
                         f"{run['wake_ms_p50']} / {run['wake_ms_max']} ms", f"≤ {WAKE_MS:g} / {WAKE_MS:g} ms",
                         run["wake_ms_p50"] <= WAKE_MS and run["wake_ms_max"] <= WAKE_MS))

    # 5b: idle against Conductor OSS (bench/run_oss.sh's idle.py --url) in the same run
    oss_idle = {run["db"]: i for run in load(d / "oss-idle.jsonl") for i in run["idle"] if i["timeout_ms"] == 100}
    for run in load(d / "idle.jsonl"):
        ref = oss_idle.get(run["db"]) or next(iter(oss_idle.values()), None)
        for i in run["idle"]:
            if i["timeout_ms"] == 100 and ref:
                ref_db = run["db"] if run["db"] in oss_idle else next(iter(oss_idle))
                rows.append((f"Idle: server CPU, {run['workers']} workers, 100 ms poll ({run['db']}), against Conductor OSS",
                             f"{i['idle_server_cpu_pct']} % of a core",
                             f"< {ref['idle_server_cpu_pct']} % (Conductor OSS, {ref_db}, {ref['polls_per_s']} polls/s)",
                             i["idle_server_cpu_pct"] < ref["idle_server_cpu_pct"]))

    # 6: memory (bench/memory.py)
    mem = [m["memory"] for m in load(d / "memory.jsonl") if "memory" in m]
    m = mem[-1] if mem else None
    if m and m.get("rest"):
        r = m["rest"]
        n = len(r["processes"])
        rows.append((f"Memory at rest: RSS summed over {n} processes ({m['server']})", f"{r['rss_mb']} MB",
                     f"≤ {MEMORY_MB:g} MB", r["rss_mb"] <= MEMORY_MB))
        rows.append((f"Memory at rest: PSS summed over {n} processes", f"{r['pss_mb']} MB",
                     f"≤ {MEMORY_MB:g} MB", r["pss_mb"] <= MEMORY_MB))
    st = (m or {}).get("stability")
    if st:
        procs = st["processes"]
        grown = [p for p in procs if p.get("growth_pct") is not None]
        whole = max(grown, key=lambda p: p["growth_pct"], default=None)
        half = [p for p in procs if p.get("growth_2nd_half_pct") is not None]
        worst = max(half, key=lambda p: p["growth_2nd_half_pct"], default=None)
        full = st["transitions"] >= st["transitions_requested"] and not st["bad"]
        gone = [p["name"] for p in procs if p.get("rss_after_mb") is None]
        measured = (f"second half: {worst['name']} {worst['growth_2nd_half_mb']:+} MB "
                    f"({worst['growth_2nd_half_pct']:+} %)" if worst else "second half: –")
        if whole:
            measured += f"; whole run: {whole['name']} {whole['growth_mb']:+} MB ({whole['growth_pct']:+} %)"
        measured += f"; {st['transitions']} of {st['transitions_requested']} transitions"
        if gone:
            measured += f"; gone during the run: {', '.join(gone)}"
        if st["bad"]:
            measured += f"; {st['bad']} workflows wrong"
        big = st["transitions_requested"] >= STABLE_RUN
        rows.append(("Memory: RSS stability, the largest growth of one process", measured,
                     f"≤ +{STABLE_PCT:g} % each over the second half" +
                     ("" if big else f"; the target is for {STABLE_RUN:,} transitions"),
                     (full and not gone and worst["growth_2nd_half_pct"] <= STABLE_PCT) if big and worst else None))

    print("\n### Against the targets (issues #9 and #25)\n")
    print("| target | measured | bound (this run) | met? |")
    print("|---|---|---|---|")
    for target, measured, bound, ok in rows:
        print(f"| {target} | {measured} | {bound} | {verdict(ok)} |")
    missing = [what for what, name in (("idle", "idle.jsonl"), ("growth", "growth.jsonl"), ("memory", "memory.jsonl"),
                                       ("overview", "overview.jsonl"))
               if not (d / name).exists()]
    if missing:
        print(f"\nNot measured in this run: {', '.join(missing)}.")
    if m:
        memory_table(m)
    overview_table(load(d / "overview.jsonl"))


def overview_table(lines: list[dict]) -> None:
    """bench/overview.py: each timed query of the Overview page, per database."""
    if not lines:
        return
    first = lines[0]
    print(f"\n#### Overview page queries ({first['executions']:,} executions over 7 days, "
          f"{first['rollup_rows']:,} rollup rows; ms, in process)\n")
    print("| query | range | database | median | worst |")
    print("|---|---|---|---:|---:|")
    for o in lines:
        print(f"| {o['overview']} | {o['range']} | {o['db']} | {o['ms_median']} | {o['ms_max']} |")


def memory_table(m: dict) -> None:
    """Each process of the embedded server: RSS and PSS at rest, RSS before and after the run."""
    rest = {p["pid"]: p for p in (m.get("rest") or {}).get("processes", [])}
    run = {p["pid"]: p for p in (m.get("stability") or {}).get("processes", [])}
    st = m.get("stability") or {}
    print(f"\n#### Memory per process ({m['server']}, {m.get('q_workers')} cluster workers; MB)\n")
    print(f"| process | pid | RSS at rest | PSS at rest | RSS before the run | at half | after "
          f"{st.get('transitions', '–')} transitions | peak | growth MB (%) | second half MB (%) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for pid in list(rest) + [p for p in run if p not in rest]:
        a, b = rest.get(pid, {}), run.get(pid, {})
        print(f"| {a.get('name') or b.get('name')} | {pid} | {f(a.get('rss_mb'))} | {f(a.get('pss_mb'))} "
              f"| {f(b.get('rss_before_mb'))} | {f(b.get('rss_mid_mb'))} | {f(b.get('rss_after_mb'))} "
              f"| {f(b.get('rss_peak_mb'))} | {f(b.get('growth_mb'))} ({f(b.get('growth_pct'))}) "
              f"| {f(b.get('growth_2nd_half_mb'))} ({f(b.get('growth_2nd_half_pct'))}) |")


def main() -> None:
    d = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    ours = load(d / "ours.jsonl")
    peers = peer_rounds(load(d / "peers.jsonl")) + oss_peers(d)

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
    # only runs on the product's server (product_server) count; the other set-ups are listed above for comparison only
    pg = our_pg(ours)
    if pg and peers:
        comparison(ours, peers, pg)
    targets(d, ours, peers)


def comparison(ours: list[dict], peers: list[dict], pg: list[dict]) -> None:
    """Ours (best PostgreSQL run on the product's server) ÷ the best run of each peer system."""
    best = max(pg, key=lambda o: o["step_transitions_per_s"])
    cheapest = min(pg, key=lambda o: (o.get("cpu_main_run") or {}).get("total_ms_per_transition") or 1e9)
    lone_best = min(pg, key=lambda o: o["lone"]["client_ms"]["p50"] or 1e9)
    systems: dict[str, list[dict]] = {}
    for o in peers:
        systems.setdefault(o["system"], []).append(o)
    print(f"\n### Ours (PostgreSQL, {best['server'].split('x')[0]}) ÷ peers\n")
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
