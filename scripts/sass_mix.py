#!/usr/bin/env python3
"""Instruction mix of the kernels in a CUDA object or executable, from `cuobjdump -sass`.

    scripts/sass_mix.py build-gpu/lib/CMakeFiles/fftconv_objects.dir/gemm/cgemm_tc.cu.o [REGEX]

Prints, per kernel whose mangled name matches REGEX (default: every kernel), the static count of
SASS instructions and the most frequent opcodes: a quick check of what a change to a kernel's
inner loop did to the code it issues (tensor-core MMAs against address arithmetic, say).
"""
import collections
import re
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    pattern = re.compile(sys.argv[2] if len(sys.argv) > 2 else ".")
    sass = subprocess.run(["cuobjdump", "-sass", sys.argv[1]], check=True, capture_output=True,
                          text=True).stdout
    for body in re.split(r"\n\s+Function : ", sass)[1:]:
        name = body.split("\n", 1)[0].strip()
        if not pattern.search(name):
            continue
        ops = collections.Counter()
        for line in body.split("\n"):
            m = re.match(r"\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
            if m:
                ops[m.group(1)] += 1
        top = " ".join(f"{op}={n}" for op, n in ops.most_common(14))
        print(f"{name}\n  {sum(ops.values())} instructions: {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
