#!/usr/bin/env python3
"""libfftconv.so exports its API and nothing else.

The dynamic symbol table (nm -D --defined-only) may hold only the C entry points (fftconv_*), the
C++ API of namespace fftconv and the type information of fftconv::Error: no fftconv::detail::,
no std:: and nothing of a C++ runtime the toolchain linked in. A library that exports such
symbols crashes inside a process that has its own copy of them (PyTorch, say).

Usage: check_exports.py LIBRARY
"""
import re
import subprocess
import sys

ALLOWED = [
    re.compile(r"^fftconv_[a-z0-9_]+$"),
    re.compile(r"^fftconv::(?!detail::)[A-Za-z_]"),
    re.compile(r"^(typeinfo|typeinfo name|vtable) for fftconv::(?!detail::)[A-Za-z_]"),
]
REQUIRED = [
    "fftconv_plan_create",
    "fftconv_forward",
    "fftconv::Plan::forward(",
    "fftconv::ConvDesc::to_string",
    "typeinfo for fftconv::Error",
]


def exported(library):
    out = subprocess.run(["nm", "-D", "--defined-only", "-C", library], check=True,
                         capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(None, 2)  # address, type, name
        if len(parts) == 3:
            names.append(parts[2])
    return names


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    names = exported(argv[1])
    bad = [n for n in names if not any(p.match(n) for p in ALLOWED)]
    missing = [r for r in REQUIRED if not any(n.startswith(r) for n in names)]
    for n in bad[:40]:
        print("exported but not API:", n)
    for r in missing:
        print("API not exported:", r)
    print(f"{len(names)} exported symbols, {len(bad)} not API, {len(missing)} missing")
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
