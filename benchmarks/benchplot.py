"""PNG plots of the benchmarks' results (matplotlib, from the `bench` extra).

Each benchmark turns its results into panels of series; ``line_panels`` draws them, one
subplot per panel, and writes one PNG.
"""

from __future__ import annotations

import math
import os


def matplotlib_pyplot():
    """matplotlib.pyplot on the file-only Agg backend; ImportError says how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plots need matplotlib: pip install 'pycdr[bench]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def line_panels(path: str, title: str, panels: dict, *, xlabel: str, ylabel: str,
                log_x: bool = True, log_y: bool = False) -> str:
    """``panels``: {panel title: {series name: [(x, y), ...]}}; writes ``path``, returns it."""
    plt = matplotlib_pyplot()
    count = max(1, len(panels))
    columns = min(3, count)
    rows = math.ceil(count / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5 * columns, 3.6 * rows), squeeze=False)
    # One colour per series name in every panel.
    names = list(dict.fromkeys(name for series in panels.values() for name in series))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colours = {name: palette[i % len(palette)] for i, name in enumerate(names)}
    for axis, (panel_title, series) in zip(axes.flat, panels.items()):
        for name, points in series.items():
            points = sorted(p for p in points if p[1] is not None)
            if points:
                axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name,
                          color=colours[name])
        axis.set_title(panel_title, fontsize=10)
        axis.set_xlabel(xlabel)
        axis.set_ylabel(ylabel)
        if log_x:
            axis.set_xscale("log", base=2)
        if log_y:
            axis.set_yscale("log")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    for axis in list(axes.flat)[count:]:
        axis.set_visible(False)
    figure.suptitle(title)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def bar_panels(path: str, title: str, panels: dict, *, ylabel: str) -> str:
    """``panels``: {panel title: {series name: {category: value}}}: grouped bars."""
    plt = matplotlib_pyplot()
    count = max(1, len(panels))
    figure, axes = plt.subplots(count, 1, figsize=(11, 3.8 * count), squeeze=False)
    for axis, (panel_title, series) in zip(axes.flat, panels.items()):
        categories = list(dict.fromkeys(c for values in series.values() for c in values))
        width = 0.8 / max(1, len(series))
        for i, (name, values) in enumerate(series.items()):
            xs = [j + i * width for j in range(len(categories))]
            axis.bar(xs, [values.get(c) or 0 for c in categories], width, label=name)
        axis.set_xticks([j + 0.4 - width / 2 for j in range(len(categories))])
        axis.set_xticklabels(categories, rotation=20, fontsize=8)
        axis.set_title(panel_title, fontsize=10)
        axis.set_ylabel(ylabel)
        axis.grid(True, axis="y", alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def plot_marshal(results: dict, directory: str) -> list[str]:
    """bench_marshal.run() results: one PNG per operation, MB/s against payload size."""
    paths = []
    rows = results["results"]
    for op in ("encode", "decode"):
        panels: dict = {}
        for row in rows:
            if row["op"] != op:
                continue
            panel = panels.setdefault(f"sequence<{row['type']}>", {})
            panel.setdefault(f"{row['impl']} {row['order']}", []).append(
                (row["size_kb"], row["mb_per_s"]))
        if panels:
            paths.append(line_panels(os.path.join(directory, f"marshal_{op}.png"),
                                     f"pycdr marshal benchmark: {op}", panels,
                                     xlabel="payload (KB)", ylabel="MB/s", log_y=True))
    return paths
