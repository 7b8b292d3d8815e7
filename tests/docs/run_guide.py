#!/usr/bin/env python3
"""Runs every command of the user guide (docs/guide/), as a reader would type them.

Pages run in the order of the index's links (docs/guide/README.md), their ```sh blocks in page
order, each block with `bash -euo pipefail` from the root of one scratch folder that looks like
the repository root: `build` links to the build tree, and models/, data/, tools/, scripts/ and
docs/ are copies, so what the guide writes (LMDBs, snapshots, its own files) lands in the
scratch folder. State carries from block to block and page to page, as it does for a reader.

A block's info string says when it runs: `sh` always; `sh gpu` only with --gpu (it needs a GPU);
`sh setup` never (it installs packages or builds: the README's scripts, which CI runs itself);
`sh matplotlib` where the Python running this script has matplotlib (scripts/setup_debian.sh
installs it);
`sh python` where the build has crema's Python module (build/python/crema).
Any other attribute is an error, so a typo cannot turn a block off. With --gpu, a failing block
that needs no GPU is reported and the run goes on (the GPU machine's build may lack OpenCV,
Graphviz or MPI; the CPU run holds those blocks); a failing gpu block fails the run, and where
no GPU is visible the run is skipped (exit 77).

usage: run_guide.py --build DIR [--source DIR] [--gpu] [--keep] [--page NAME]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

COPIED = ["models", "data", "tools", "scripts", "docs", "examples"]
# What a reader's clone does not hold: the outputs of earlier runs (.gitignore).
UNCOPIED = ["*_lmdb", "snapshots", "fashion_mnist", "synthetic_imagenet", "*.caffemodel",
            "*.solverstate"]
KNOWN_ATTRIBUTES = {"gpu", "setup", "matplotlib", "python"}


SKIPPED = 77  # ctest's SKIP_RETURN_CODE for this test


def gpu_visible(build):
    done = subprocess.run([os.path.join(build, "crema"), "device_query"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    m = re.search(r"CUDA devices: (\d+)", done.stdout)
    return bool(m) and int(m.group(1)) > 0


def pages_in_order(guide):
    index = os.path.join(guide, "README.md")
    with open(index) as f:
        names = re.findall(r"\]\(([A-Za-z0-9_.-]+\.md)\)", f.read())
    missing = [n for n in names if not os.path.isfile(os.path.join(guide, n))]
    if missing:
        sys.exit(f"run_guide: error: the index links to missing pages: {', '.join(missing)}")
    unlisted = sorted(set(n for n in os.listdir(guide) if n.endswith(".md")) - set(names) -
                      {"README.md"})
    if unlisted:
        sys.exit(f"run_guide: error: pages not in the index: {', '.join(unlisted)}")
    return ["README.md"] + list(dict.fromkeys(names))


def blocks(path):
    """(line, attributes, text) of every fenced block whose info string starts with sh."""
    found, fence, start, info, body = [], None, 0, "", []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            stripped = line.strip()
            if fence is None:
                m = re.match(r"^(```+)\s*(.*)$", stripped)
                if m:
                    fence, start, info, body = m.group(1), number, m.group(2).split(), []
            elif stripped == fence:
                if info and info[0] == "sh":
                    found.append((start, info[1:], "".join(body)))
                fence = None
            else:
                body.append(line)
    if fence is not None:
        sys.exit(f"run_guide: error: {path}:{start}: the block never ends")
    return found


def scratch_copy(source, build, root):
    for name in COPIED:
        shutil.copytree(os.path.join(source, name), os.path.join(root, name), symlinks=True,
                        ignore=shutil.ignore_patterns(*UNCOPIED))
    os.makedirs(os.path.join(root, "models", "lenet_fashion", "snapshots"), exist_ok=True)
    os.symlink(os.path.abspath(build), os.path.join(root, "build"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="the build tree (with crema and the tools)")
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--gpu", action="store_true", help="also run the blocks tagged gpu")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--page", help="run this page only (it may need the earlier pages' files)")
    args = ap.parse_args()
    source = os.path.abspath(args.source)
    guide = os.path.join(source, "docs", "guide")
    pages = pages_in_order(guide)
    if args.page:
        pages = [p for p in pages if p == args.page]

    if args.gpu and not gpu_visible(args.build):
        print("run_guide: no GPU visible: skipped")
        sys.exit(SKIPPED)

    root = tempfile.mkdtemp(prefix="crema-guide-")
    scratch_copy(source, args.build, root)
    # The blocks' python3 is the interpreter running this script: CMake picks the one crema's
    # Python module is built for, which need not be the first python3 on PATH.
    python_dir = tempfile.mkdtemp(prefix="crema-guide-python-")
    wrapper = os.path.join(python_dir, "python3")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    os.chmod(wrapper, 0o755)
    env = dict(os.environ, PATH=python_dir + os.pathsep + os.environ.get("PATH", ""))
    ran = skipped = 0
    has_matplotlib = subprocess.run([sys.executable, "-c", "import matplotlib"],
                                    stderr=subprocess.DEVNULL).returncode == 0
    has_python_module = os.path.isdir(os.path.join(args.build, "python", "crema"))
    try:
        for page in pages:
            for line, attributes, text in blocks(os.path.join(guide, page)):
                where = f"docs/guide/{page}:{line}"
                unknown = set(attributes) - KNOWN_ATTRIBUTES
                if unknown:
                    sys.exit(f"run_guide: error: {where}: unknown attribute {sorted(unknown)}")
                if ("setup" in attributes or ("gpu" in attributes and not args.gpu) or
                        ("matplotlib" in attributes and not has_matplotlib) or
                        ("python" in attributes and not has_python_module)):
                    skipped += 1
                    continue
                began = time.monotonic()
                done = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=root,
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True)
                seconds = time.monotonic() - began
                print(f"{where}: exit {done.returncode}, {seconds:.1f} s", flush=True)
                if done.returncode != 0 and args.gpu and "gpu" not in attributes:
                    print(f"{where}: failed here, left to the CPU run: "
                          f"{done.stdout.splitlines()[-1:]}")
                    skipped += 1
                    continue
                if done.returncode != 0:
                    tail = "\n".join(done.stdout.splitlines()[-40:])
                    print(f"--- the block:\n{text}--- its output (last 40 lines):\n{tail}")
                    sys.exit(f"run_guide: error: {where}: the block failed")
                ran += 1
        if ran == 0:
            sys.exit("run_guide: error: no block ran")
        print(f"run_guide: {ran} blocks ran, {skipped} skipped (setup, gpu, matplotlib "
              f"{'present' if has_matplotlib else 'missing'}, Python module "
              f"{'present' if has_python_module else 'missing'})")
    finally:
        if args.keep:
            print(f"run_guide: scratch folder kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(python_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
