#!/usr/bin/env python3
"""A Markdown table of the `gpu` stage from corpus reports (docs/gpu.md).

    python3 corpus/tools/gpu_summary.py REPORT.json...

One row per kernel, preset and mode (arguments on the host, or already on
the device as CuPy's are: ``cargo xtask corpus --args-on-device``): the
stage's verdict, the emitted program's
median time on the device (``NAME_run`` alone), NumPy's on the host CPU and
CuPy's on the GPU for the same kernel and sizes, and the speed-ups; then the
geometric means of the speed-ups over the kernels that have both times.
"""

import json
import math
import sys


def fmt(ms):
    return "-" if ms is None else f"{ms:.3f}"


def speedup(x):
    return "-" if x is None else f"{x:.1f}x"


def main(paths):
    rows = []
    for path in paths:
        try:
            with open(path) as f:
                reports = json.load(f)
        except (OSError, ValueError) as e:
            print(f"gpu_summary.py: {path}: {e}", file=sys.stderr)
            continue
        for r in reports:
            stage = dict(r["stages"]).get("gpu")
            if stage is None:
                continue
            verdict = stage["verdict"]
            if verdict != "pass":
                verdict = f"{verdict}: {stage.get('reason', '').splitlines()[0][:80]}"
            # Arguments on the device: timed as CuPy is, inputs already there.
            preset = r["preset"] + (" (args on device)" if r.get("args_on_device") else "")
            rows.append((r["kernel"], preset, verdict, r.get("gpu") or {}))
    print("| kernel | preset | gpu | device ms | NumPy ms | CuPy ms | vs NumPy | vs CuPy |")
    print("|---|---|---|---|---|---|---|---|")
    for kernel, preset, verdict, g in rows:
        cupy = g.get("cupy_ms")
        if cupy is not None and g.get("cupy_matches_numpy") is False:
            cupy_text = f"{fmt(cupy)} (differs from NumPy)"
        else:
            cupy_text = fmt(cupy)
        print(f"| {kernel} | {preset} | {verdict} | {fmt(g.get('device_ms'))} | "
              f"{fmt(g.get('numpy_ms'))} | {cupy_text} | "
              f"{speedup(g.get('speedup_vs_numpy'))} | {speedup(g.get('speedup_vs_cupy'))} |")
    for key, name in (("speedup_vs_numpy", "NumPy"), ("speedup_vs_cupy", "CuPy")):
        values = [g[key] for _, _, v, g in rows if v == "pass" and g.get(key)]
        if values:
            mean = math.exp(sum(math.log(v) for v in values) / len(values))
            print(f"\ngeometric mean speed-up over {name}: {mean:.2f}x ({len(values)} kernels)")
    passed = sum(1 for _, _, v, _ in rows if v == "pass")
    print(f"\n{passed} of {len(rows)} kernel runs passed the gpu stage")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
