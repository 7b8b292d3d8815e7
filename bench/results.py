#!/usr/bin/env python3
"""Runs the benchmarks behind docs/results.md and writes their tables into it.

    bench/results.py run --build DIR --out DIR SECTION...   run benches, one table file each
    bench/results.py update --out DIR [--doc docs/results.md]   put the table files in the page

Each section of docs/results.md holds its table between `<!-- results:NAME -->` and
`<!-- /results:NAME -->`; `update` replaces what is between them with OUT/NAME.md, which `run`
wrote: a line naming the machine, the date and the command, then the table. Sections (`run`
without any lists them): steps, graph and graph-tf32, scale (two GPUs or more), conv-fp32, conv-tf32, conv-bf16
(bench_prim, built with -DCREMA_CUDNN_ROOT), memory (bench_prim's memory-bound rows), cpu-lenet,
cpu-nets (the CPU build). Run from the repository root.
"""
import argparse
import datetime
import math
import os
import platform
import re
import subprocess
import sys

MEMORY_FILTERS = ["pool", "lrn", "softmax", "relu", "bias", "dropout", "update"]


def sh(command, env=None, log=False):
    """Runs a command line; its standard output (with log, also its standard error: glog's
    lines), or exits naming it where it fails."""
    done = subprocess.run(command, shell=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if log else subprocess.PIPE, text=True,
                          env=dict(os.environ, **(env or {})))
    if done.returncode != 0:
        tail = "\n".join((done.stdout + (done.stderr or "")).splitlines()[-20:])
        sys.exit(f"results: error: `{command}` failed (exit {done.returncode}):\n{tail}")
    return done.stdout


def gpu_machine():
    names = sh("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader").splitlines()
    name, driver = [s.strip() for s in names[0].split(",")]
    count = f"{len(names)} x " if len(names) > 1 else ""
    return f"{count}{name}, driver {driver}"


def cpu_machine():
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def table_lines(text):
    """The lines of the last markdown table in text."""
    tables, current = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    if not tables:
        sys.exit("results: error: the bench printed no table")
    return tables[-1]


def prim_rows(text):
    """bench_prim's rows as dicts of its 13 columns."""
    keys = ["op", "layer", "pass", "crema_algo", "cudnn_algo", "crema_ms", "cudnn_ms", "ratio",
            "crema_rate", "cudnn_rate", "err", "copy_ms", "of_copy"]
    rows = []
    for line in table_lines(text)[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.append(dict(zip(keys, cells)))
    return rows


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def conv_section(build, math_mode):
    command = f"{build}/bench/prim/bench_prim --math={math_mode} --filter=conv --repeats=5"
    # The filter also matches other ops' rows named after a convolution (its bias, its update).
    rows = [r for r in prim_rows(sh(command)) if r["op"] == "conv"]
    lines = ["| layer | pass | crema algorithm | cuDNN algorithm | crema ms | cuDNN ms | "
             "crema / cuDNN |", "|---|---|---|---|--:|--:|--:|"]
    ratios = {}
    for r in rows:
        if r["crema_algo"].startswith("FAILED"):
            lines.append(f"| {r['layer']} | {r['pass']} | {r['crema_algo']} | | | | |")
            continue
        lines.append(f"| {r['layer']} | {r['pass']} | {r['crema_algo']} | {r['cudnn_algo']} | "
                     f"{r['crema_ms']} | {r['cudnn_ms']} | {r['ratio']} |")
        if r["ratio"] != "-":
            ratios.setdefault(r["pass"], []).append(float(r["ratio"]))
    every = [v for vs in ratios.values() for v in vs]
    means = ", ".join(f"{p} {geomean(v):.2f}" for p, v in ratios.items())
    lines.append("")
    lines.append(f"Geometric mean of crema / cuDNN over the {len(every)} rows: "
                 f"{geomean(every):.2f} ({means}); rows at most 1.0: "
                 f"{sum(v <= 1.0 for v in every)}.")
    return command, lines


def memory_section(build):
    rows = []
    for f in MEMORY_FILTERS:
        command = f"{build}/bench/prim/bench_prim --filter={f} --repeats=20"
        rows += [r for r in prim_rows(sh(command)) if r["op"] != "conv"]
    lines = ["| op | layer | pass | crema algorithm | cuDNN | crema ms | cuDNN ms | crema / cuDNN | "
             "% of copy |", "|---|---|---|---|---|--:|--:|--:|--:|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['layer']} | {r['pass']} | {r['crema_algo']} | "
                     f"{r['cudnn_algo']} | {r['crema_ms']} | {r['cudnn_ms']} | {r['ratio']} | "
                     f"{r['of_copy']} |")
    copies = [float(r["of_copy"].rstrip("%")) for r in rows if r.get("of_copy", "-") != "-"]
    lines.append("")
    lines.append(f"Lowest share of a same-size copy: {min(copies):.0f}%; rows under cuDNN's time: "
                 f"{sum(r['ratio'] != '-' and float(r['ratio']) < 1 for r in rows)} of "
                 f"{sum(r['ratio'] != '-' for r in rows)}.")
    return (f"for F in {' '.join(MEMORY_FILTERS)}; do {build}/bench/prim/bench_prim --filter=$F "
            "--repeats=20; done"), lines


def script_section(command, env):
    text = sh(command, env)
    return " ".join([f"{k}={v}" for k, v in env.items()] + [command]), table_lines(text)


def cpu_lenet(build):
    step = f"{build}/train_step --solver=models/lenet_fashion/lenet_solver.prototxt " \
           "--iterations=300"
    timing = f"{build}/crema time --model=bench/models/lenet_time.prototxt --iterations=200"
    median = re.search(r"ms/iter: median ([0-9.]+)", sh(step, log=True))
    per_layer = layer_times(sh(timing, log=True))
    lines = ["| layer | forward ms | backward ms |", "|---|--:|--:|"]
    ms = lambda v: v if v == "-" else f"{float(v):.3f}"
    lines += [f"| {name} | {ms(f)} | {ms(b)} |" for name, f, b in per_layer]
    lines += ["", f"Whole LeNet training step (LMDB data, forward, backward, update): median "
              f"{median.group(1) if median else 'error'} ms."]
    return f"{step}; {timing}", lines


def layer_times(text):
    """(layer, forward ms, backward ms) from `crema time`'s per-layer lines."""
    forward, backward, order = {}, {}, []
    for m in re.finditer(r"\] +(\S+)\s+(forward|backward): ([0-9.]+) ms", text):
        name, which, ms = m.groups()
        if which == "forward" and name not in forward:
            order.append(name)
        (forward if which == "forward" else backward)[name] = ms
    return [(n, forward[n], backward.get(n, "-")) for n in order]


def cpu_nets(build):
    runs = [("CaffeNet deploy, batch 10, forward",
             f"{build}/crema time --model=models/caffenet/deploy.prototxt --phase=TEST "
             "--iterations=30", "Average Forward pass"),
            ("CIFAR-10 quick, batch 100, forward + backward",
             f"{build}/crema time --model=models/cifar10_quick/bench_train.prototxt "
             "--iterations=10", "Average Forward-Backward")]
    lines = ["| net | ms |", "|---|--:|"]
    for what, command, key in runs:
        m = re.search(re.escape(key) + r": ([0-9.]+) ms", sh(command, log=True))
        lines.append(f"| {what} | {float(m.group(1)):.1f} |" if m else f"| {what} | error |")
    return "; ".join(c for _, c, _ in runs), lines


def run(args):
    build = os.path.abspath(args.build)
    sections = {
        "steps": lambda: script_section(f"bench/peers/run.sh {build}",
                                        {"ITERS": "20", "WARMUP": "5", "TIME_ITERS": "5"}),
        "graph": lambda: script_section(f"bench/peers/graph.sh {build}", {}),
        "graph-tf32": lambda: script_section(f"bench/peers/graph.sh {build}",
                                             {"PRECISION": "tf32"}),
        "scale": lambda: script_section(f"bench/peers/scale.sh {build}", {}),
        "conv-fp32": lambda: conv_section(build, "fp32"),
        "conv-tf32": lambda: conv_section(build, "tf32"),
        "conv-bf16": lambda: conv_section(build, "bf16"),
        "memory": lambda: memory_section(build),
        "cpu-lenet": lambda: cpu_lenet(build),
        "cpu-nets": lambda: cpu_nets(build),
    }
    if not args.sections:
        sys.exit("results: sections: " + ", ".join(sections))
    unknown = [s for s in args.sections if s not in sections]
    if unknown:
        sys.exit(f"results: error: unknown section {', '.join(unknown)}; sections: "
                 + ", ".join(sections))
    os.makedirs(args.out, exist_ok=True)
    for name in args.sections:
        machine = cpu_machine() if name.startswith("cpu") else gpu_machine()
        command, lines = sections[name]()
        date = datetime.date.today().isoformat()
        text = f"{machine}, {date}: `{command.replace(build, 'BUILD')}`\n\n" + "\n".join(lines)
        with open(os.path.join(args.out, name + ".md"), "w") as f:
            f.write(text + "\n")
        print(f"results: {name} written")


def update(args):
    with open(args.doc) as f:
        doc = f.read()
    done = []
    for file in sorted(os.listdir(args.out)):
        if not file.endswith(".md"):
            continue
        name = file[:-3]
        block = re.compile(rf"(<!-- results:{re.escape(name)} -->\n).*?(<!-- /results:"
                           rf"{re.escape(name)} -->)", re.S)
        if not block.search(doc):
            sys.exit(f"results: error: {args.doc} has no block results:{name}")
        with open(os.path.join(args.out, file)) as f:
            table = f.read()
        doc = block.sub(lambda m: m.group(1) + table + "\n" + m.group(2), doc)
        done.append(name)
    with open(args.doc, "w") as f:
        f.write(doc)
    print(f"results: updated {', '.join(done) or 'nothing'} in {args.doc}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    r = sub.add_parser("run")
    r.add_argument("--build", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("sections", nargs="*")
    u = sub.add_parser("update")
    u.add_argument("--out", required=True)
    u.add_argument("--doc", default="docs/results.md")
    args = ap.parse_args()
    run(args) if args.verb == "run" else update(args)


if __name__ == "__main__":
    main()
