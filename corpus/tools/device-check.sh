#!/usr/bin/env bash
# The corpus on a real NVIDIA GPU, in one prepared script (docs/gpu.md).
#
#   corpus/tools/device-check.sh --prepare   # here, with Rust: build what is carried
#   corpus/tools/device-check.sh             # there: run it, write $OUT
#
# `--prepare` builds the release `xtask` (the corpus runner, which is also
# the runner of the programs' child processes) into target/device-bin/, the
# one ignored folder the device machine needs (`carry: ["target/device-bin"]`).
# The machine needs no Rust and no network: only this working tree, nvcc and
# CUDA's libraries, python3 with NumPy (and CuPy, when installed).
#
# Without `--prepare` it prints what the machine has, asks the CUDA runtime
# for a device (and stops there, status 0, with "no device: ..." when there
# is none), then runs the corpus with the `gpu` stage at the S preset, again
# with every array argument on the device (`--args-on-device`, beside CuPy's
# arrays on the device) and, if time remains, at M, with a limit per program and one for the whole
# script ($DEVICE_CHECK_BUDGET seconds, default 450: under 8 minutes).
# Everything it prints goes to $OUT/device-check.log; the corpus reports go
# to $OUT/corpus-S.json, $OUT/corpus-S-on-device.json, $OUT/corpus-M.json and a table to $OUT/summary.md.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
bin_dir="target/device-bin"

if [[ "${1:-}" == "--prepare" ]]; then
    set -e
    cargo build --release -p xtask
    mkdir -p "$bin_dir"
    cp target/release/xtask "$bin_dir/xtask"
    strip "$bin_dir/xtask" 2>/dev/null || true
    echo "prepared: $bin_dir/xtask ($(du -h "$bin_dir/xtask" | cut -f1)); carry \"$bin_dir\""
    exit 0
fi
if [[ $# -gt 0 ]]; then
    echo "usage: $0 [--prepare]" >&2
    exit 2
fi

out="${OUT:-target/device-check}"
mkdir -p "$out"
exec > >(tee -a "$out/device-check.log") 2>&1
start=$(date +%s)
budget="${DEVICE_CHECK_BUDGET:-450}"
left() { echo $((budget - ($(date +%s) - start))); }

echo "== device check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores"
echo "== the machine"
uname -srm
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || nvidia-smi
else
    echo "nvidia-smi: not found"
fi
nvcc_bin="$(command -v nvcc || true)"
for c in "${CUDA_HOME:-}/bin/nvcc" "${CUDA_PATH:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
    [[ -z "$nvcc_bin" && -x "$c" ]] && nvcc_bin="$c"
done
if [[ -n "$nvcc_bin" ]]; then
    "$nvcc_bin" --version | tail -2
else
    echo "nvcc: not found"
fi
python3 - <<'EOF' || echo "python3: not usable"
import sys
print("python", sys.version.split()[0])
try:
    import numpy
    print("numpy", numpy.__version__)
except ImportError:
    print("numpy: not installed")
try:
    import cupy
    print("cupy", cupy.__version__)
except Exception as e:
    print(f"cupy: not usable ({type(e).__name__})")
EOF

xtask="${DEVICE_CHECK_BIN:-$bin_dir/xtask}"
if [[ ! -x "$xtask" ]]; then
    echo "no carried runner at $xtask: run \`corpus/tools/device-check.sh --prepare\` where Rust is, and carry \"$bin_dir\""
    exit 1
fi
export SDFG_ROOT="$root"

echo "== the CUDA runtime"
info="$("$xtask" gpu-info --backend cuda)"
echo "$info"
if [[ "$info" == "gpu: none:"* ]]; then
    echo "no device: ${info#gpu: none: }"
    echo "(nothing was run; $out/device-check.log has this output)"
    exit 0
fi

status=0
for preset in S M; do
    remaining=$(left)
    # M only when the S run left enough time for it to be worth starting.
    if [[ "$preset" == M && "$remaining" -lt 150 ]]; then
        echo "== preset M not run: ${remaining} s of the budget left"
        break
    fi
    echo "== the corpus at preset $preset (${remaining} s of the budget left)"
    # `exec` (the emulated GPU) and `cc` (NVRTC from NVIDIA's wheels) are
    # CI's stages; nvcc compiles every unit in `gpu` here.
    timeout --signal=INT --kill-after=10 "$remaining" \
        "$xtask" corpus --backend cuda --preset "$preset" --jobs "$(nproc)" \
        --skip exec --skip cc --repeat 10 --gpu-timeout 60 \
        --json "$out/corpus-$preset.json" | tee "$out/corpus-$preset.txt"
    rc=${PIPESTATUS[0]}
    echo "== preset $preset: exit status $rc"
    [[ "$preset" == S ]] && status=$rc
    if [[ "$preset" == S ]]; then
        # The comparison NPBench makes: every array argument already on
        # the GPU, as CuPy's arrays are when CuPy is timed.
        remaining=$(left)
        echo "== the corpus at preset S, arguments on the device (${remaining} s of the budget left)"
        timeout --signal=INT --kill-after=10 "$remaining" \
            "$xtask" corpus --backend cuda --preset S --args-on-device --jobs "$(nproc)" \
            --skip exec --skip cc --repeat 10 --gpu-timeout 60 \
            --json "$out/corpus-S-on-device.json" | tee "$out/corpus-S-on-device.txt"
        rc=${PIPESTATUS[0]}
        echo "== preset S, arguments on the device: exit status $rc"
        [[ $rc -ne 0 ]] && status=$rc
    fi
done

python3 "$root/corpus/tools/gpu_summary.py" "$out"/corpus-*.json | tee "$out/summary.md"
echo "== done in $(($(date +%s) - start)) s; $out has the log, the reports and summary.md"
exit "$status"
