"""Writing a verified kernel as a PyTorch custom operator (`kforge export --as-op NAME`).

The module written (`<NAME>_op.py`, from `data/export/custom_op.py.j2`) registers `torch.ops.kforge.<NAME>` with
`torch.library.custom_op`, its fake implementation running the problem's reference Model on fake tensors (so
torch.compile learns the outputs' shapes without tracing the kernel), and offers a layer class holding the
kernel's parameters. It loads `solution.py` and `problem.py` from its own folder, so the three travel together.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from kforge.templating import template_environment

_OPERATOR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class OperatorNameError(ValueError):
    """An operator name torch.library would refuse."""


def check_operator_name(name: str) -> str:
    """`name` when it can name an operator (a Python identifier of at most 64 characters); else the error."""
    if not _OPERATOR_NAME.fullmatch(name):
        raise OperatorNameError(f"--as-op needs a Python identifier (letters, digits, _; not starting with a digit), "
                                f"not {name!r}")
    return name


def layer_class_name(name: str) -> str:
    """The layer class of operator `name`: leaky_scale -> LeakyScale."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) or "Kernel"


def write_custom_op(name: str, out_dir: Path, problem_file: Path, run_id: int) -> list[Path]:
    """Write `<name>_op.py` and a copy of the problem (its reference gives the operator's output shapes) into
    `out_dir`, beside the exported `solution.py`."""
    check_operator_name(name)
    out_dir.mkdir(parents=True, exist_ok=True)
    problem_copy = out_dir / "problem.py"
    if problem_file.resolve() != problem_copy.resolve():
        shutil.copyfile(problem_file, problem_copy)
    template = template_environment("kforge", "data/export").get_template("custom_op.py.j2")
    module = out_dir / f"{name}_op.py"
    module.write_text(template.render(name=name, class_name=layer_class_name(name), run_id=run_id,
                                      problem=problem_file.name))
    return [problem_copy, module]
