"""Compile the kernels of a CUDA translation unit with NVRTC, NVIDIA's
runtime compiler, loaded from the `nvidia-cuda-nvrtc-cu12` wheel: a real
device-code check on a machine without nvcc or a GPU.

usage: nvrtc_check.py FILE.cu [--arch=sm_90]
The wheels' `nvidia/` directory is $SDFG_NVIDIA_WHEELS.  Exit status 0 when
NVRTC compiles the file (for an `sm_*` architecture this includes NVIDIA's
assembler), 1 with NVRTC's log on stderr when it does not, 2 when NVRTC
cannot be loaded."""
import ctypes
import os
import sys


def main():
    nv = os.environ["SDFG_NVIDIA_WHEELS"]
    path = sys.argv[1]
    arch = next((a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith("--arch=")), "sm_90")
    try:
        lib = ctypes.CDLL(os.path.join(nv, "cuda_nvrtc", "lib", "libnvrtc.so.12"))
    except OSError as e:
        print(f"cannot load NVRTC: {e}", file=sys.stderr)
        return 2
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    with open(path, "rb") as f:
        source = f.read()
    options = [f"--gpu-architecture={arch}", "-std=c++17"] + [
        "-I" + os.path.join(nv, d, "include") for d in ("cuda_runtime", "cuda_cccl")
    ]
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source, path.encode(), 0, None, None):
        print("nvrtcCreateProgram failed", file=sys.stderr)
        return 2
    opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    status = lib.nvrtcCompileProgram(prog, len(options), opts)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    text = log.value.decode(errors="replace").strip()
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    if status != 0:
        print(text or lib.nvrtcGetErrorString(status).decode(), file=sys.stderr)
        return 1
    if text:
        print(text, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
