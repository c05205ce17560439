"""The build of the C kernel (everything else about the package is in ``pyproject.toml``).

The kernel (``spades_env/_native/*.c``: the batched engine's step, the PIMC bots' play-outs, the
card-play rules) is plain C loaded with ``ctypes`` by ``spades_env/native.py``. It is built here
as the extension module ``spades_env._kernel`` (``module.c`` adds an empty module to it, limited
API: one ``abi3`` wheel per platform), so ``pip install`` / ``python -m build`` / ``pip install -e
.`` compile it once and the installed package needs no compiler (CONTRIBUTING.md, Packaging).

- OpenMP (``SpadesVectorEnv(threads=...)``) when the compiler has it: a probe compiles and links a
  parallel loop with the flags the kernel uses; without it the kernel is built serial.
  ``SPADES_ENV_OPENMP=0`` forces a serial build, ``=1`` makes a missing OpenMP an error.
- ``sp_build_info.h`` (written to the build folder) holds the SHA-256 of the sources
  (``native.source_digest``): ``native.py`` refuses a library built from other sources than the
  package's, so an in-place build left stale by an edit of the C code is never run.
- The shipped agent (``checkpoints/shipped/agent.pt``, outside the package in a checkout) is
  copied into the built package as ``spades_env/agents/shipped/agent.pt`` (``agents.
  SHIPPED_CHECKPOINT`` looks there first).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.errors import CompileError, LinkError

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = os.path.join("spades_env", "_native")
KERNEL_SOURCES = [os.path.join(NATIVE, n) for n in
                  ("vector_kernel.c", "playout.c", "deals.c", "rules.c", "module.c")]
AGENT = os.path.join("checkpoints", "shipped", "agent.pt")

_PROBE = r"""
#include <stdint.h>
#include <omp.h>
int64_t spades_env_omp_probe(int64_t n, int t) {
    int64_t s = 0;
    _Pragma("omp parallel for schedule(static) num_threads(t) if(t > 1) reduction(+:s)")
    for (int64_t i = 0; i < n; i++) s += i;
    return s + omp_get_max_threads();
}
"""


def _native_module():
    """``spades_env/native.py`` loaded from its file (standard library only), without importing
    the package (whose dependencies a build environment may lack): its ``source_digest`` is the
    one the loader checks the library against."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "_spades_env_native_at_build", os.path.join(HERE, "spades_env", "native.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def source_digest(folder: str) -> str:
    """SHA-256 of the kernel's sources: ``spades_env.native.source_digest`` (one function)."""
    return _native_module().source_digest(folder)


def _exported(paths) -> list:
    """The kernel's exported functions (``sp_*`` defined at the start of a line, not static):
    named to the linker on Windows, where a DLL exports only what it is told to."""
    names = []
    for path in paths:
        with open(os.path.join(HERE, path), encoding="utf-8") as f:
            names += re.findall(r"^(?:const\s+)?[a-z0-9_]+\s*\*?\s*(sp_\w+)\(", f.read(), re.M)
    return sorted(set(names))


class BuildKernel(build_ext):
    """``build_ext`` with the kernel's flags, OpenMP when the compiler has it, and the digest."""

    def _flags(self):
        if self.compiler.compiler_type == "msvc":
            return ["/O2", "/fp:precise", "/std:c11"], [(["/openmp"], [])]
        # -fno-fast-math: k / 13.0f must be IEEE float32 division (vector_kernel.c)
        base = ["-O3", "-std=c11", "-fno-fast-math", "-Wno-unknown-pragmas", "-g0"]
        omp = [(["-fopenmp"], ["-fopenmp"])]
        if sys.platform == "darwin":  # Apple clang: only with libomp installed
            omp.append((["-Xpreprocessor", "-fopenmp"], ["-lomp"]))
        return base, omp

    def _openmp(self, base, choices):
        """The first (compile, link) flags that build a parallel loop, else None."""
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "omp_probe.c")
            with open(src, "w") as f:
                f.write(_PROBE)
            for cflags, lflags in choices:
                try:
                    objs = self.compiler.compile([src], output_dir=tmp,
                                                 extra_postargs=base + cflags)
                    self.compiler.link_shared_object(objs, os.path.join(tmp, "omp_probe.so"),
                                                     extra_postargs=lflags)
                except (CompileError, LinkError):
                    continue
                return cflags, lflags
        return None

    def build_extensions(self):
        base, choices = self._flags()
        want = os.environ.get("SPADES_ENV_OPENMP", "auto").strip().lower()
        omp = None if want in ("0", "no", "off", "false") else self._openmp(base, choices)
        if omp is None and want in ("1", "yes", "on", "true"):
            raise CompileError("SPADES_ENV_OPENMP=1 but this compiler builds no OpenMP loop")
        print(f"spades_env kernel: OpenMP {'on: ' + ' '.join(omp[0]) if omp else 'off'}")
        info = os.path.join(os.path.abspath(self.build_temp), "spades_env_info")
        os.makedirs(info, exist_ok=True)
        with open(os.path.join(info, "sp_build_info.h"), "w") as f:
            f.write(f'#define SP_SOURCE_DIGEST "{source_digest(os.path.join(HERE, NATIVE))}"\n')
        for ext in self.extensions:
            ext.include_dirs.append(info)
            ext.extra_compile_args = base + (omp[0] if omp else [])
            ext.extra_link_args = omp[1] if omp else []
        super().build_extensions()


class BuildPy(build_py):
    """``build_py`` that also puts the shipped agent into the package."""

    def run(self):
        super().run()
        src = os.path.join(HERE, AGENT)
        if os.path.isfile(src):
            dst = os.path.join(self.build_lib, "spades_env", "agents", "shipped", "agent.pt")
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(src, dst)


setup(
    ext_modules=[Extension("spades_env._kernel", KERNEL_SOURCES, py_limited_api=True,
                           define_macros=[("Py_LIMITED_API", "0x030A0000")],
                           export_symbols=_exported(KERNEL_SOURCES))],
    cmdclass={"build_ext": BuildKernel, "build_py": BuildPy},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
