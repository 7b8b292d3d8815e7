"""`cmake --install` puts the package where Python finds it under the prefix, and the installed
copy works without the build tree; the compiled module exports nothing but its entry point."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD_DIR, SMALL_NET


def test_installed_package_imports_and_runs(tmp_path):
    cmake = os.environ.get("CREMA_CMAKE_COMMAND", "cmake")
    prefix = tmp_path / "prefix"
    subprocess.run([cmake, "--install", BUILD_DIR, "--prefix", str(prefix)], check=True,
                   stdout=subprocess.DEVNULL)
    version = "python%d.%d" % sys.version_info[:2]
    site = prefix / "lib" / version / "dist-packages"
    assert (site / "crema" / "proto" / "caffe_pb2.py").exists()
    (tmp_path / "net.prototxt").write_text(SMALL_NET)
    code = ("import crema as caffe, numpy as np\n"
            "net = caffe.Net('net.prototxt', caffe.TEST)\n"
            "print(caffe.__file__)\n"
            "print(net.forward(data=np.ones((2, 3, 4, 4)))['prob'].sum())\n")
    env = dict(os.environ, PYTHONPATH=str(site))
    run = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    where, total = run.stdout.split()
    assert where.startswith(str(site))
    assert abs(float(total) - 2) < 1e-5


def test_module_exports_only_its_entry_point():
    """A symbol the module exported could bind an extension module imported after it: with
    libstdc++'s locale facet ids among them, onnxruntime 1.30 crashed in its own import."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    import crema._crema as module
    out = subprocess.run([nm, "-D", "--defined-only", module.__file__], check=True,
                         capture_output=True, text=True).stdout
    exported = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
    assert exported == ["PyInit__crema"]
