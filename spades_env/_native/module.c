/* The Python extension module spades_env._kernel: an empty module, so that the C kernel
 * (vector_kernel.c, playout.c, rules.c) is built and installed with the package like any
 * extension (setup.py; which defines Py_LIMITED_API) and found with the package's own import machinery; spades_env/native.py
 * then loads the same file with ctypes. Limited API (abi3): one wheel serves every CPython >= 3.10.
 * sp_build_info.h is written by setup.py at build time (the digest of the kernel's sources). */
#include <Python.h>
#include "sp_build_info.h"

/* The SHA-256 of the sources this library was built from (native.source_digest()): native.py
 * refuses a library built from other sources than the package's (an in-place build left stale). */
const char *sp_source_digest(void) { return SP_SOURCE_DIGEST; }

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT, "_kernel",
    "The C kernel of spades_env (loaded with ctypes by spades_env.native).", 0, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModuleDef_Init(&kernel_module); }
