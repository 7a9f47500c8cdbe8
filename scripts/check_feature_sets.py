#!/usr/bin/env python3
"""Fail when two of CI's builds would compile a shared dependency with
different features.

Cargo compiles a crate once per feature set, so a dependency that `cargo
test`, the Python wheel or `--features llama-cpp` asks for with one more
feature than `cargo run` is compiled again, with everything above it
(candle among them): that made a clean CI run take 80 minutes instead of
30. Each build's resolved graph comes from `cargo tree`; every feature set
a crate is compiled with for `cargo run` must be among those the later
builds compile it with. (A later build may compile a crate once more for
a new user, such as a build script of llama.cpp's bindings; that adds a
compile of the crate and leaves the others' reused.)

Usage: scripts/check_feature_sets.py   (from the repository root)
"""

import subprocess
import sys

# The builds `.ci/run` makes after its first `cargo run`: name, package,
# extra arguments, dependency kinds.
BUILDS = [
    ("cargo run", "iesr", [], "normal,build"),
    ("cargo test", "iesr", [], "normal,build,dev"),
    ("the Python wheel", "iesr-python", [], "normal,build"),
    ("--features llama-cpp", "iesr", ["--features", "llama-cpp"], "normal,build,dev"),
]


def host_target():
    info = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(line.split(": ", 1)[1] for line in info.splitlines() if line.startswith("host: "))


def features_by_crate(package, extra, kinds, target):
    """{ "name vX.Y.Z": {"feature,list", ...} } of one build's resolved graph.

    A crate used both at build time and at run time may be resolved twice,
    with two feature sets; both are kept."""
    command = [
        "cargo", "tree", "--locked", "-p", package, *extra, "-e", kinds,
        "--target", target, "--prefix", "none", "-f", "{p}|{f}",
    ]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    crates = {}
    for line in output.splitlines():
        line = line.removesuffix(" (*)").strip()
        if "|" not in line:
            continue
        crate, features = line.split("|", 1)
        # Path dependencies print their folder after the version.
        crate = " ".join(crate.split()[:2])
        crates.setdefault(crate, set()).add(features)
    return crates


def show(feature_sets):
    return " ".join(f"[{features}]" for features in sorted(feature_sets))


def main():
    target = host_target()
    graphs = [(name, features_by_crate(package, extra, kinds, target))
              for name, package, extra, kinds in BUILDS]
    first_name, first = graphs[0]
    differences = []
    for name, graph in graphs[1:]:
        for crate in sorted(first.keys() & graph.keys()):
            if crate.startswith("iesr "):
                continue  # the package itself differs by design
            if not first[crate] <= graph[crate]:
                differences.append(
                    f"{crate}: {first_name} {show(first[crate])}, {name} {show(graph[crate])}")
    if differences:
        print("these dependencies would be compiled again with other features, and all "
              "above them with them; ask for the union of their features in Cargo.toml:",
              file=sys.stderr)
        for line in differences:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"the {len(first)} crates of `cargo run` are compiled once for all {len(BUILDS)} builds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
