"""Offloading in process is ``sdfgc offload``: the same bytes for every
corpus kernel's DaCe SDFG, the same errors, a ``dace.SDFG`` DaCe accepts,
and a DaCe pass that changes the SDFG it is given."""

from __future__ import annotations

import json
import subprocess

import pytest

import sdfg_offload
from conftest import CORPUS, corpus_kernels, dace_sdfg, kernel_id, require_dace

dace = require_dace()

VARIANTS = [("", False), ("gpu-storage", True)]


@pytest.mark.parametrize("variant,on_device", VARIANTS, ids=["lowered", "gpu-storage"])
@pytest.mark.parametrize("kernel", corpus_kernels(), ids=kernel_id)
def test_in_process_offload_writes_the_bytes_sdfgc_writes(kernel, variant, on_device, sdfgc, dace_sdfgs):
    path = dace_sdfg(dace_sdfgs, kernel, variant)
    if not path.exists():
        pytest.fail(f"DaCe wrote no `{path.name}` (see corpus/tools/dace_to_sdfg.py)")
    command = [str(sdfgc), "offload", str(path), "--backend", "cuda"]
    if on_device:
        command.append("--args-on-device")
    cli = subprocess.run(command, capture_output=True, text=True)
    # The SDFG as DaCe holds it in memory, not the file's text: what a
    # DaCe user hands over.
    sdfg = dace.SDFG.from_file(str(path))
    try:
        text, report = sdfg_offload.offload_json(sdfg, "cuda", args_on_device=on_device)
    except sdfg_offload.errors.Error as e:
        assert cli.returncode != 0, f"sdfgc offloaded it, the package raised {type(e).__name__}: {e}"
        # The same refusal, word for word (`sdfgc` names the file first).
        assert cli.stderr.strip().endswith(f": {e}"), (cli.stderr, str(e))
        return
    assert cli.returncode == 0, f"the package offloaded it, sdfgc said: {cli.stderr}"
    assert cli.stdout == text + "\n"
    assert report.passes and report.accelerator == "cuda"


def test_offload_gives_a_dace_sdfg_that_dace_validates_and_generates_code_for(dace_sdfgs):
    sdfg = dace.SDFG.from_file(str(dace_sdfg(dace_sdfgs, CORPUS / "polybench/jacobi_2d.py")))
    result, report = sdfg_offload.offload(sdfg, with_report=True)
    assert isinstance(result, dace.SDFG)
    result.validate()
    storages = {d.storage for d in result.arrays.values()}
    assert dace.StorageType.GPU_Global in storages
    code = result.generate_code()
    assert any(c.target is not None and c.target.target_name == "cuda" for c in code), [c.title for c in code]
    assert report.kernels, report.text
    # Offloading is idempotent: the result offloads to itself.
    again, report = sdfg_offload.offload_json(result)
    assert report.already_offloaded


def test_the_pass_changes_the_sdfg_it_is_given_inside_a_dace_pipeline(dace_sdfgs):
    from dace.transformation import pass_pipeline as ppl

    sdfg = dace.SDFG.from_file(str(dace_sdfg(dace_sdfgs, CORPUS / "polybench/jacobi_2d.py")))
    identity = id(sdfg)
    expected, _ = sdfg_offload.offload_json(sdfg)
    pipeline = ppl.Pipeline([sdfg_offload.OffloadToAccelerator(backend="cuda")])
    results = pipeline.apply_pass(sdfg, {})
    assert id(sdfg) == identity
    report = results["OffloadToAccelerator"]
    assert isinstance(report, sdfg_offload.Report) and report.kernels
    sdfg.validate()
    # Every block and nested SDFG belongs to the caller's object now.
    for block in sdfg.all_control_flow_blocks(recursive=True):
        assert block.sdfg is sdfg or block.sdfg in set(sdfg.all_sdfgs_recursive())
    assert json.dumps(sdfg.to_json(), sort_keys=True) == json.dumps(
        json.loads(expected), sort_keys=True
    ) or sdfg_offload.offload_json(sdfg)[1].already_offloaded
    sdfg.generate_code()


def test_offload_takes_a_path_text_and_a_dict_alike(dace_sdfgs):
    path = dace_sdfg(dace_sdfgs, CORPUS / "polybench/gemm.py")
    text = path.read_text()
    by_path, _ = sdfg_offload.offload_json(path)
    by_str_path, _ = sdfg_offload.offload_json(str(path))
    by_text, _ = sdfg_offload.offload_json(text)
    by_dict, _ = sdfg_offload.offload_json(json.loads(text))
    assert by_path == by_str_path == by_text == by_dict


def test_dace_builds_the_offloaded_sdfg_with_nvcc(dace_sdfgs, tmp_path):
    """DaCe compiles the offloaded SDFG (jacobi_2d) into a library with a
    real CUDA toolkit (nvcc from NVIDIA's PyPI wheels; no GPU needed to
    build): `SDFG_CUDA_TOOLKIT` names its root (`.ci/run` installs it)."""
    import os
    import sys

    toolkit = os.environ.get("SDFG_CUDA_TOOLKIT")
    if not toolkit:
        if os.environ.get("CI"):
            pytest.fail("SDFG_CUDA_TOOLKIT is not set (.ci/run installs nvcc)")
        pytest.skip("no CUDA toolkit: set SDFG_CUDA_TOOLKIT to one (docs/python.md)")
    script = f"""
import warnings; warnings.simplefilter("ignore")
import dace, sdfg_offload
dace.Config.set("compiler", "cuda", "backend", value="cuda")
dace.Config.set("compiler", "cuda", "cuda_arch", value="80")
dace.Config.set("default_build_folder", value={str(tmp_path / ".dacecache")!r})
sdfg = dace.SDFG.from_file({str(dace_sdfg(dace_sdfgs, CORPUS / "polybench/jacobi_2d.py"))!r})
sdfg_offload.OffloadToAccelerator(backend="cuda").apply_pass(sdfg, {{}})
print("built", sdfg.compile().filename)
"""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.join(toolkit, "bin"), os.path.dirname(sys.executable), env["PATH"]])
    env["CUDAToolkit_ROOT"] = toolkit
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0 and "built " in out.stdout, out.stdout[-2000:] + out.stderr[-4000:]
