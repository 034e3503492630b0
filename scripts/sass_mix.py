#!/usr/bin/env python3
"""Instruction mix of the kernels in a CUDA object, cubin or executable, from `cuobjdump -sass`.

    scripts/sass_mix.py [--loops] FILE [REGEX]

Prints, per kernel whose mangled name matches REGEX (default: every kernel), the static count of
SASS instructions and the most frequent opcodes: a quick check of what a change to a kernel's
inner loop did to the code it issues (tensor-core MMAs against address arithmetic, say). With
--loops, also each loop (a backward branch and the code it jumps over) with its own count and
mix, innermost first: the instructions per multiply-add of a kernel's hot loop, say.

No GPU is needed: compile a kernel's source for the target with
    nvcc -O3 -DNDEBUG -std=c++17 --expt-relaxed-constexpr -Iinclude -Ilib -Ibuild/include \\
         -gencode arch=compute_90,code=sm_90 -cubin -o k.cubin -Xptxas -v lib/fused/fused_conv.cu
(-Xptxas -v prints each kernel's registers and spills) and read k.cubin. cuobjdump comes with
the CUDA toolkit; where the toolkit lacks it, PyPI's nvidia-cuda-cuobjdump wheel holds it
(`pip download --no-deps nvidia-cuda-cuobjdump`, unzip, nvidia/cu13/bin/cuobjdump), or name one
with $CUOBJDUMP.
"""
import collections
import os
import re
import subprocess
import sys

INSTRUCTION = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(.*?);")
BRANCH_TARGET = re.compile(r"BRA\s+(?:`\(\.L_x_\d+\)\s*)?(0x[0-9a-f]+)")


def mix(ops, top=14):
    return " ".join(f"{op}={n}" for op, n in collections.Counter(ops).most_common(top))


def main() -> int:
    args = sys.argv[1:]
    loops = "--loops" in args
    args = [a for a in args if a != "--loops"]
    if not args or len(args) > 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    pattern = re.compile(args[1] if len(args) > 1 else ".")
    tool = os.environ.get("CUOBJDUMP", "cuobjdump")
    sass = subprocess.run([tool, "-sass", args[0]], check=True, capture_output=True,
                          text=True).stdout
    for body in re.split(r"\n\s+Function : ", sass)[1:]:
        name = body.split("\n", 1)[0].strip()
        if not pattern.search(name):
            continue
        code = []  # (address, opcode, operands)
        for line in body.split("\n"):
            m = INSTRUCTION.match(line)
            if m:
                code.append((int(m.group(1), 16), m.group(2), m.group(3)))
        print(f"{name}\n  {len(code)} instructions: {mix(op for _, op, _ in code)}")
        if not loops:
            continue
        index = {address: i for i, (address, _, _) in enumerate(code)}
        found = []
        for i, (address, op, operands) in enumerate(code):
            m = BRANCH_TARGET.search(op + " " + operands) if op == "BRA" else None
            target = int(m.group(1), 16) if m else None
            if target is not None and target < address and target in index:
                found.append((index[target], i))
        for first, last in sorted(found, key=lambda f: f[1] - f[0]):
            ops = [op for _, op, _ in code[first:last + 1]]
            print(f"  loop {code[first][0]:#x}-{code[last][0]:#x}: {len(ops)} instructions: "
                  f"{mix(ops, 10)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
