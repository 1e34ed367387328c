"""What a reference problem computes (GEMM, reduction, ...), read from its source without running it.

Only the `Model` class is read (layers built in `__init__`, operations in `forward` and helpers), so
the arithmetic in `get_inputs` does not count. Attention implies GEMM and reduction too: retrieving for
an attention problem should also find the matmul and softmax entries.
"""

from __future__ import annotations

import ast

from kforge import pyparse

_GEMM = {"Linear", "Bilinear", "LazyLinear", "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "einsum",
         "linear", "bilinear", "tensordot", "mv", "addmv", "chain_matmul", "inner", "outer"}
_CONVOLUTION = {"Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
                "LazyConv1d", "LazyConv2d", "LazyConv3d", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                "conv_transpose2d", "conv_transpose3d", "unfold", "Unfold"}
_REDUCTION = {"sum", "mean", "max", "min", "amax", "amin", "prod", "softmax", "log_softmax", "logsumexp", "norm",
              "var", "std", "var_mean", "std_mean", "argmax", "argmin", "cumsum", "cumprod", "nansum", "all", "any",
              "Softmax", "LogSoftmax", "Softmin", "softmin", "LayerNorm", "GroupNorm", "RMSNorm", "InstanceNorm1d",
              "InstanceNorm2d", "InstanceNorm3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "layer_norm",
              "group_norm", "rms_norm", "batch_norm", "instance_norm", "normalize", "MaxPool1d", "MaxPool2d",
              "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
              "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "max_pool1d",
              "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
              "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d", "cross_entropy", "nll_loss",
              "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
              "CrossEntropyLoss", "MSELoss", "L1Loss", "KLDivLoss", "cosine_similarity", "pairwise_distance",
              "cdist", "topk", "sort", "median", "mode", "logcumsumexp", "count_nonzero"}
_ELEMENTWISE = {"relu", "relu6", "gelu", "silu", "sigmoid", "tanh", "exp", "exp2", "expm1", "log", "log2", "log1p",
                "sqrt", "rsqrt", "abs", "neg", "clamp", "clip", "clamp_min", "clamp_max", "where", "leaky_relu",
                "elu", "selu", "celu", "mish", "softplus", "softsign", "hardtanh", "hardswish", "hardsigmoid",
                "logsigmoid", "tanhshrink", "threshold", "pow", "square", "sin", "cos", "erf", "erfc", "reciprocal",
                "add", "sub", "mul", "div", "maximum", "minimum", "fmax", "fmin", "sign", "floor", "ceil", "round",
                "trunc", "lerp", "addcmul", "addcdiv", "dropout", "masked_fill", "glu", "ReLU", "ReLU6", "GELU",
                "SiLU", "Sigmoid", "Tanh", "LeakyReLU", "ELU", "SELU", "CELU", "Mish", "Softplus", "Hardtanh",
                "Hardswish", "Hardsigmoid", "LogSigmoid", "Dropout", "GLU", "PReLU", "prelu", "Identity"}
_ATTENTION = {"scaled_dot_product_attention", "MultiheadAttention", "multi_head_attention_forward",
              "flash_attention", "TransformerEncoderLayer", "TransformerDecoderLayer", "Transformer"}
_SOFTMAX = {"softmax", "Softmax", "log_softmax"}
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.FloorDiv, ast.Mod)
_SCALAR_CALLS = {"len", "int", "float", "math", "size", "dim", "numel", "item", "range"}


def problem_features(problem_source: str) -> frozenset[str]:
    """The features of a reference problem: a subset of gemm, reduction, elementwise, convolution, attention.

    Raises ValueError (one line) when the source does not parse.
    """
    try:
        tree = pyparse.parse(problem_source)
    except SyntaxError as error:
        raise ValueError(f"problem source does not parse (line {error.lineno}): {error.msg}") from None
    scope: ast.AST = next((node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Model"),
                          tree)
    # __init__ builds layers from configuration numbers: its calls count, its arithmetic does not
    constructor = {id(node) for method in ast.walk(scope) if isinstance(method, ast.FunctionDef)
                   and method.name == "__init__" for node in ast.walk(method)}
    found: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Call):
            found.update(_classify(_call_name(node.func)))
        elif isinstance(node, ast.BinOp) and id(node) not in constructor:
            if isinstance(node.op, ast.MatMult):
                found.add("gemm")
            elif isinstance(node.op, _ARITHMETIC) and not (_is_scalar(node.left) and _is_scalar(node.right)):
                found.add("elementwise")
    for function in ast.walk(scope):
        if isinstance(function, ast.FunctionDef) and _has_attention_flow(function):
            found.add("attention")
    if "attention" in found:
        found.update({"gemm", "reduction"})
    return frozenset(found)


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _classify(name: str) -> set[str]:
    tags = set()
    for feature, names in (("gemm", _GEMM), ("convolution", _CONVOLUTION), ("reduction", _REDUCTION),
                           ("elementwise", _ELEMENTWISE), ("attention", _ATTENTION)):
        if name in names or (name.endswith("_") and name[:-1] in names and feature == "elementwise"):
            tags.add(feature)
    return tags


def _is_scalar(node: ast.expr) -> bool:
    """Whether an operand is plainly a Python number (a literal, a shape entry, a math.* result)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float))
    if isinstance(node, ast.UnaryOp):
        return _is_scalar(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_scalar(node.left) and _is_scalar(node.right)
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
    if isinstance(node, ast.Call):
        func = node.func
        root = func.value if isinstance(func, ast.Attribute) else func
        return _call_name(func) in _SCALAR_CALLS or (isinstance(root, ast.Name) and root.id == "math")
    return False


def _has_attention_flow(function: ast.FunctionDef) -> bool:
    """softmax(Q K^T) V within one function: a matmul whose operand is a softmax of a matmul's result.

    Names carry what their value was built from, so the pattern is found across several statements.
    """
    carried: dict[str, set[str]] = {}

    def tags(expr: ast.AST) -> set[str]:
        out: set[str] = set()
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and node.id in carried:
                out |= carried[node.id]
            elif _is_matmul(node):
                operands = _matmul_operands(node)
                if any("softmax_of_matmul" in tags(operand) for operand in operands):
                    out.add("attention")
                out.add("matmul")
            elif isinstance(node, ast.Call) and _call_name(node.func) in _SOFTMAX:
                inner = set().union(*(tags(arg) for arg in [*node.args, *_receiver(node)])) if node.args or \
                    _receiver(node) else set()
                if "matmul" in inner:
                    out.add("softmax_of_matmul")
        return out

    for statement in ast.walk(function):
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and statement.value is not None:
            value_tags = tags(statement.value)
            if "attention" in value_tags:
                return True
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    carried[target.id] = carried.get(target.id, set()) | value_tags
        elif isinstance(statement, ast.Return) and statement.value is not None and "attention" in tags(
                statement.value):
            return True
    return False


def _is_matmul(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return True
    return isinstance(node, ast.Call) and _call_name(node.func) in {"matmul", "bmm", "mm", "einsum"}


def _matmul_operands(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    assert isinstance(node, ast.Call)
    return [*node.args, *_receiver(node)]


def _receiver(node: ast.Call) -> list[ast.AST]:
    """`a` in `a.matmul(b)` or `s.softmax(-1)`, unless `a` is a module such as torch or F."""
    func = node.func
    if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id in
                                                {"torch", "F", "nn", "functional"}):
        return [func.value]
    return []
