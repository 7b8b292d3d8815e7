#!/usr/bin/env python3
"""Plots training curves from crema (or Caffe) training logs, with the chart types of Caffe's
plot_training_log.py:

  plot_training_log.py CHART OUT LOG [LOG ...]

CHART is a number or a name:
  0 test-accuracy-iters   1 test-accuracy-seconds   2 test-loss-iters   3 test-loss-seconds
  4 lr-iters              5 lr-seconds              6 train-loss-iters  7 train-loss-seconds
OUT's extension picks the format (.png, .svg, .pdf). Each log is one curve, labelled with its
file name; seconds count from the log's first line. Test accuracy is the first test net's first
output that is not a loss (Accuracy's "accuracy" in Caffe's nets), test loss its weighted loss
outputs; train loss is the smoothed loss of the display lines. Needs matplotlib (Debian:
python3-matplotlib).
"""
import os
import re
import sys

CHARTS = ["test-accuracy-iters", "test-accuracy-seconds", "test-loss-iters", "test-loss-seconds",
          "lr-iters", "lr-seconds", "train-loss-iters", "train-loss-seconds"]

# glog's prefix as Caffe writes it: severity, month, day, time (crema's default), or with the year.
PREFIX = re.compile(r"^[IWEF](?:\d{4})?(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2}\.\d+)")
TESTING = re.compile(r"Iteration (\d+), Testing net \(#(\d+)\)")
TEST_OUTPUT = re.compile(r"Test net output #\d+: (\S+) = ([-+0-9.eEinfINFna]+)(?: \(\* [^=]+= ([-+0-9.eEinfINFna]+) loss\))?")
TRAIN_LOSS = re.compile(r"Iteration (\d+)(?: \(.*\))?, loss = ([-+0-9.eEinfINFna]+)")
LR = re.compile(r"Iteration (\d+), lr = ([-+0-9.eEinfINFna]+)")


def seconds_of(match, first):
    """Seconds since the first prefixed line (month and day roll over as days)."""
    month, day, hour, minute, second = match.groups()
    t = ((int(day) + 31 * int(month)) * 24 + int(hour)) * 3600 + int(minute) * 60 + float(second)
    return t - first if first is not None else 0.0, t


def parse(path):
    """Per series, a list of (iteration, seconds, value)."""
    series = {"test-accuracy": [], "test-loss": [], "lr": [], "train-loss": []}
    first = None
    seconds = 0.0
    test_iter, test_net = None, None
    with open(path, errors="replace") as log:
        for line in log:
            prefix = PREFIX.match(line)
            if prefix:
                seconds, t = seconds_of(prefix, first)
                if first is None:
                    first = t
            m = TESTING.search(line)
            if m:
                test_iter, test_net = int(m.group(1)), int(m.group(2))
                continue
            m = TEST_OUTPUT.search(line)
            if m and test_net == 0:
                value, weighted = float(m.group(2)), m.group(3)
                if weighted is not None:
                    series["test-loss"].append((test_iter, seconds, float(weighted)))
                elif not any(p[0] == test_iter for p in series["test-accuracy"]):
                    series["test-accuracy"].append((test_iter, seconds, value))
                continue
            m = TRAIN_LOSS.search(line)
            if m:
                series["train-loss"].append((int(m.group(1)), seconds, float(m.group(2))))
                continue
            m = LR.search(line)
            if m:
                series["lr"].append((int(m.group(1)), seconds, float(m.group(2))))
    return series


def chart_of(arg):
    if arg.isdigit() and int(arg) < len(CHARTS):
        return CHARTS[int(arg)]
    if arg in CHARTS:
        return arg
    raise ValueError(f"unknown chart {arg!r}; give 0-7 or one of {', '.join(CHARTS)}")


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    try:
        chart = chart_of(argv[1])
    except ValueError as e:
        print(f"plot_training_log: error: {e}", file=sys.stderr)
        return 1
    out, logs = argv[2], argv[3:]
    if os.path.splitext(out)[1].lower() not in (".png", ".svg", ".pdf"):
        print(f"plot_training_log: error: {out}: name the chart .png, .svg or .pdf",
              file=sys.stderr)
        return 1
    name, x_axis = chart.rsplit("-", 1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_training_log: error: needs matplotlib (Debian: apt-get install "
              "python3-matplotlib)", file=sys.stderr)
        return 1
    fig, ax = plt.subplots(figsize=(8, 5))
    plotted = 0
    for path in logs:
        try:
            points = parse(path)[name]
        except OSError as e:
            print(f"plot_training_log: error: {path}: {e.strerror}", file=sys.stderr)
            return 1
        if not points:
            print(f"plot_training_log: warning: {path} has no {name} values", file=sys.stderr)
            continue
        xs = [p[0] if x_axis == "iters" else p[1] for p in points]
        ax.plot(xs, [p[2] for p in points], marker="." if len(points) < 50 else None,
                label=os.path.basename(path))
        plotted += 1
    if not plotted:
        print(f"plot_training_log: error: no log has {name} values", file=sys.stderr)
        return 1
    titles = {"test-accuracy": "Test accuracy", "test-loss": "Test loss",
              "lr": "Learning rate", "train-loss": "Training loss"}
    ax.set_xlabel("Iterations" if x_axis == "iters" else "Seconds")
    ax.set_ylabel(titles[name])
    ax.set_title(f"{titles[name]} vs. {'iterations' if x_axis == 'iters' else 'seconds'}")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
