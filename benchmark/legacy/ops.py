"""The reviewed alias table of `benchmark import-legacy`: legacy op names -> today's paddle API.

Data, reviewed like code (each entry comes from reading the op's test in PaddlePaddle/benchmark,
``api/tests/<op>.py`` or ``api/tests_v2/<op>.py``, against paddle 3.x). An op that is not listed is
resolved generically: the first of ``paddle.nn.functional.<op>``, ``paddle.<op>``,
``paddle.linalg.<op>``, ``paddle.vision.ops.<op>`` that the operator allowlist admits, with the
legacy parameter names taken as the function's own. An entry may say:

``api``
    the paddle function (a dotted name; it still has to pass the allowlist).
``apis``
    for a legacy *family* (one config timed for several APIs, the legacy ``api_list``): ``{short
    name: paddle function}``; every listed API becomes a case named ``<op>_<short>_legacy_<n>``.
``rename``
    legacy parameter -> the function's parameter.
``drop``
    legacy parameter -> why it is not passed (whatever its value).
``drop_default``
    legacy parameter -> the only value that can be dropped (any other value is reported).
``set``
    attributes the legacy test passed as constants (not in the config).
``shape_attrs``
    attribute -> ``[input, start]``: the attribute is ``input``'s shape from dimension ``start`` on.
``extra_inputs``
    tensors the legacy test created itself (parameters of a layer, boxes): ``{name: {"shape": [ref,
    ...], "low":, "high":, "dtype":}}``, each shape element an integer or a ``"<input>.<dim>"``
    reference (dtype: the first input's by default).
``flag_inputs``
    ``{attribute: extra_inputs}``: a legacy switch (``cached_sin_cos``) that, when true, stands for
    inputs the test made itself; the attribute is not passed.
``ranges``
    value range of integer inputs that index something: ``{input: {"low": v, "high": v}}`` where a
    value is a number, ``"<input>.<dim>"`` (a dimension of another input; ``<dim>`` may name an
    attribute holding the axis), ``"<input>.min"`` (its smallest dimension), ``"<input>.count"`` (the
    number of tensors of a tensor list), or ``"attr:<name>"``,
    optionally followed by ``//N`` (divided) and ``+N`` or ``-N``.
``values``
    ``{input: values}``: values beyond a range (`benchmark.config.schema.TensorSpec.values`):
    ``sorted``, ``positive_definite``, ``{"boxes_in": input}``, ``{"sum_of": input}``.
``program``
    the legacy test built a static program (control flow): a ``kind: program`` case with these
    ``feed`` (names of the config's inputs), ``ops`` and ``fetch``, run in static mode.
``layer``, ``args``
    the legacy test built a layer (it created its weights): a ``kind: layer`` case of this class;
    ``args`` maps each constructor argument to ``"attr:<legacy attribute>"`` or ``"<input>.<dim>"``;
    the attributes left over go to its forward.
``references``
    paddle function -> numpy reference (only where the reference takes the same inputs in order
    and attributes limited to `REFERENCE_ATTRS`).
``adjust``
    a named shape rule in `benchmark.legacy.cases` (``elementwise``, ``matmul``, ``pool2d``, ``expand``,
    ``gram``, ``set_value``).
``places``
    where the op has kernels, when not everywhere (default: cpu and gpu).
``skip``
    ``[reason category, message]``: the op has no function API to time.
``note``
    why the mapping is what it is (copied into each case's description).
"""

from __future__ import annotations

from typing import Any

# Reason categories of configs that are not converted (the keys of the command's closing table).
UNKNOWN_OP = "unknown op"
NOT_AN_OP = "not an operator call"
PRIVATE = "only a private API today"
REMOVED = "removed from paddle"
PARAM = "param not in signature"
DTYPE = "unsupported dtype"
SHAPE = "shape not convertible"
VALUE = "value not convertible"
MALFORMED = "malformed config"
MODEL = "model arguments do not map"
REASONS = (
    UNKNOWN_OP,
    PARAM,
    NOT_AN_OP,
    PRIVATE,
    REMOVED,
    DTYPE,
    SHAPE,
    VALUE,
    MALFORMED,
    MODEL,
)

# The attributes a numpy reference can take (`benchmark.runners.reference.NUMPY_ATTRS`): a reference
# is only set on a case whose attributes are all among these.
REFERENCE_ATTRS = frozenset({"axis", "keepdim", "transpose_x", "transpose_y"})

# Legacy Variable dtypes that are spelled differently today.
DTYPE_ALIASES = {"int": "int64", "float": "float32", "double": "float64", "long": "int64"}

# Legacy switches that no function takes today, dropped wherever they appear.
GLOBAL_DROP = {
    "use_cudnn": "a cuDNN switch of the legacy API; paddle picks the kernel itself",
    "use_mkldnn": "a oneDNN switch of the legacy API; paddle picks the kernel itself",
}

F = "paddle.nn.functional"


def _xy_branch(op: str) -> list[dict[str, Any]]:
    """A branch of the legacy control-flow programs: r = paddle.<op>(x, y)."""
    return [{"op": f"paddle.{op}", "inputs": ["x", "y"], "out": "r"}]


# fluid's conv*_transpose layers: their legacy attributes as the paddle.nn layer's constructor
_CONV_TRANSPOSE_ARGS = {
    "in_channels": "x.1",
    "out_channels": "attr:num_filters",
    "kernel_size": "attr:filter_size",
    "stride": "attr:stride",
    "padding": "attr:padding",
    "dilation": "attr:dilation",
    "groups": "attr:groups",
    "data_format": "attr:data_format",
}
# roi_align and roi_pool: boxes of the legacy test's size, split evenly over the batch
_ROI = {
    "values": {"boxes": {"boxes_in": "x", "side": [50, 51]}, "boxes_num": {"sum_of": "boxes"}},
    "note": "boxes of 50-51 pixels as the legacy test drew them (here anywhere in the image, there at "
    "the origin), split evenly over the batch",
}
_NONE_OUT = "the legacy 'out' argument (None) is not passed"

OPS: dict[str, dict[str, Any]] = {
    # ---- families: the legacy api_list of the op's test -------------------------------------
    "activation": {
        "apis": {
            "sigmoid": f"{F}.sigmoid",
            "hardsigmoid": f"{F}.hardsigmoid",
            "swish": f"{F}.swish",
            "hardswish": f"{F}.hardswish",
            "softplus": f"{F}.softplus",
            "tanhshrink": f"{F}.tanhshrink",
            "softshrink": f"{F}.softshrink",
            "softsign": f"{F}.softsign",
        },
        "references": {f"{F}.sigmoid": "scipy.special.expit"},
        "note": "the legacy 'activation' config is timed for every function of its api_list",
    },
    "elementwise": {
        "apis": {
            "add": "paddle.add",
            "subtract": "paddle.subtract",
            "multiply": "paddle.multiply",
            "maximum": "paddle.maximum",
            "minimum": "paddle.minimum",
            "fmax": "paddle.fmax",
            "fmin": "paddle.fmin",
            "mod": "paddle.mod",
        },
        "drop": {
            "axis": "modern paddle broadcasts by trailing dimensions; the legacy axis is applied to y's shape"
        },
        "adjust": "elementwise",
        "references": {
            "paddle.add": "numpy.add",
            "paddle.subtract": "numpy.subtract",
            "paddle.multiply": "numpy.multiply",
            "paddle.maximum": "numpy.maximum",
            "paddle.minimum": "numpy.minimum",
            "paddle.fmax": "numpy.fmax",
            "paddle.fmin": "numpy.fmin",
        },
        "note": "the legacy 'elementwise' config is timed for every function of its api_list",
    },
    "compare": {
        "apis": {
            "less_than": "paddle.less_than",
            "less_equal": "paddle.less_equal",
            "not_equal": "paddle.not_equal",
            "greater_than": "paddle.greater_than",
            "greater_equal": "paddle.greater_equal",
            "equal": "paddle.equal",
        },
        "drop": {"cond": _NONE_OUT, "force_cpu": "a placement switch of the legacy API"},
        "references": {
            "paddle.less_than": "numpy.less",
            "paddle.less_equal": "numpy.less_equal",
            "paddle.not_equal": "numpy.not_equal",
            "paddle.greater_than": "numpy.greater",
            "paddle.greater_equal": "numpy.greater_equal",
            "paddle.equal": "numpy.equal",
        },
    },
    "logical": {
        "apis": {
            "and": "paddle.logical_and",
            "or": "paddle.logical_or",
            "xor": "paddle.logical_xor",
        },
        "references": {
            "paddle.logical_and": "numpy.logical_and",
            "paddle.logical_or": "numpy.logical_or",
            "paddle.logical_xor": "numpy.logical_xor",
        },
    },
    "bitwise": {
        "apis": {"and": "paddle.bitwise_and", "or": "paddle.bitwise_or", "xor": "paddle.bitwise_xor"},
        "references": {
            "paddle.bitwise_and": "numpy.bitwise_and",
            "paddle.bitwise_or": "numpy.bitwise_or",
            "paddle.bitwise_xor": "numpy.bitwise_xor",
        },
    },
    "arg": {
        "apis": {"argmax": "paddle.argmax", "argmin": "paddle.argmin"},
        "references": {"paddle.argmax": "numpy.argmax", "paddle.argmin": "numpy.argmin"},
    },
    "reduce": {
        "apis": {
            "sum": "paddle.sum",
            "mean": "paddle.mean",
            "max": "paddle.max",
            "min": "paddle.min",
            "prod": "paddle.prod",
        },
        "references": {
            "paddle.sum": "numpy.sum",
            "paddle.mean": "numpy.mean",
            "paddle.max": "numpy.max",
            "paddle.min": "numpy.min",
            "paddle.prod": "numpy.prod",
        },
    },
    "reduce_all_any": {
        "apis": {"all": "paddle.all", "any": "paddle.any"},
        "references": {"paddle.all": "numpy.all", "paddle.any": "numpy.any"},
    },
    "isfinite_nan_inf": {
        "apis": {"isfinite": "paddle.isfinite", "isnan": "paddle.isnan", "isinf": "paddle.isinf"},
        "references": {
            "paddle.isfinite": "numpy.isfinite",
            "paddle.isnan": "numpy.isnan",
            "paddle.isinf": "numpy.isinf",
        },
    },
    # ---- renamed ops and renamed parameters -------------------------------------------------
    "assign": {"api": "paddle.assign", "rename": {"input": "x"}},
    # tensor-list inputs: the reference gets the list as its first argument, as the op does
    "concat": {"references": {"paddle.concat": "numpy.concatenate"}},
    "stack": {"references": {"paddle.stack": "numpy.stack"}},
    "multi_dot": {
        "api": "paddle.linalg.multi_dot",
        "rename": {"inputs": "x"},
        "references": {"paddle.linalg.multi_dot": "numpy.linalg.multi_dot"},
    },
    "bincount": {
        "api": "paddle.bincount",
        "rename": {"w": "weights"},
        "ranges": {"x": {"low": 0, "high": 64}},
    },
    "conv1d": {"api": f"{F}.conv1d"},
    "conv2d": {"api": f"{F}.conv2d"},
    "conv3d": {"api": f"{F}.conv3d"},
    "depthwise_conv2d": {
        "api": f"{F}.conv2d",
        "note": "a depthwise convolution is conv2d with groups = channels",
    },
    "deformable_conv": {"api": "paddle.vision.ops.deform_conv2d"},
    "determinant": {
        "api": "paddle.linalg.det",
        "drop": {"y": "an unused second tensor of the legacy config (its test times det(x))"},
    },
    "dropout_nd": {
        "api": f"{F}.dropout",
        "note": "dropout over the given axes is paddle's dropout with axis",
    },
    "gather_nd": {
        "api": "paddle.gather_nd",
        "rename": {"input": "x"},
        "ranges": {"index": {"low": 0, "high": "x.min"}},
    },
    "gaussian_random": {
        "api": "paddle.normal",
        "drop": {
            "seed": "the harness seeds the run itself",
            "dtype": "paddle.normal draws in the default dtype (float32)",
        },
        "note": "fluid's gaussian_random is paddle.normal today",
    },
    "graph_send_recv": {
        "api": "paddle.geometric.send_u_recv",
        "rename": {"pool_type": "reduce_op"},
        "ranges": {"src_index": {"low": 0, "high": "x.0"}, "dst_index": {"low": 0, "high": "x.0"}},
    },
    "interp_area": {
        "api": f"{F}.interpolate",
        "drop": {"interp_mode": "becomes mode"},
        "set": {"mode": "area"},
    },
    "interp_bicubic": {
        "api": f"{F}.interpolate",
        "drop": {"interp_mode": "becomes mode"},
        "set": {"mode": "bicubic"},
    },
    "interp_bilinear": {
        "api": f"{F}.interpolate",
        "drop": {"interp_mode": "becomes mode"},
        "set": {"mode": "bilinear"},
    },
    "interp_linear": {
        "api": f"{F}.interpolate",
        "drop": {"interp_mode": "becomes mode"},
        "set": {"mode": "linear"},
    },
    "interp_nearest": {
        "api": f"{F}.interpolate",
        "drop": {"interp_mode": "becomes mode"},
        "set": {"mode": "nearest"},
    },
    "interp_trilinear": {
        "api": f"{F}.interpolate",
        "drop": {"interp_mode": "becomes mode"},
        "set": {"mode": "trilinear"},
    },
    "grid_sample": {"drop": {"out_shape": "the output's shape follows from grid's"}},
    "fused_rotary_position_embedding": {
        "api": "paddle.incubate.nn.functional.fused_rotary_position_embedding",
        "flag_inputs": {
            "cached_sin_cos": {"sin": {"shape": [1, "q.1", 1, "q.3"]}, "cos": {"shape": [1, "q.1", 1, "q.3"]}}
        },
        "places": ["gpu"],
        "note": "paddle registers fused_rotary_position_embedding for GPU only",
    },
    "kldiv_loss": {"api": f"{F}.kl_div"},
    "layer_norm": {"api": f"{F}.layer_norm", "shape_attrs": {"normalized_shape": ["x", 1]}},
    "lerp": {"api": "paddle.lerp", "rename": {"w": "weight"}},
    "p_norm": {
        "api": "paddle.linalg.norm",
        "rename": {"porder": "p"},
        "drop_default": {"asvector": False},
    },
    "pad2d": {"api": f"{F}.pad"},
    "pad3d": {"api": f"{F}.pad"},
    "pool2d": {
        "api": f"{F}.max_pool2d",
        "adjust": "pool2d",
        "note": "fluid's pool2d is max_pool2d or avg_pool2d by pool_type (global pooling: the whole plane)",
    },
    "remainder": {
        "api": "paddle.remainder",
        "drop": {
            "axis": "modern paddle broadcasts by trailing dimensions; the legacy axis is applied to y's shape"
        },
        "adjust": "elementwise",
    },
    "scatter": {
        "api": "paddle.scatter",
        "rename": {"input": "x"},
        "ranges": {"index": {"low": 0, "high": "x.0"}},
    },
    "scatter_nd_add": {
        "api": "paddle.scatter_nd_add",
        "rename": {"input": "x"},
        "ranges": {"index": {"low": 0, "high": "x.min"}},
    },
    "size": {"api": "paddle.numel", "references": {"paddle.numel": "numpy.size"}},
    "expand": {"adjust": "expand"},
    "softmax": {"api": f"{F}.softmax", "references": {f"{F}.softmax": "scipy.special.softmax"}},
    "viterbi_decode": {
        "api": "paddle.text.viterbi_decode",
        "rename": {"emission": "potentials", "transition": "transition_params", "length": "lengths"},
        "ranges": {"lengths": {"low": 1, "high": "potentials.1+1"}},
    },
    "warpctc": {
        "api": f"{F}.ctc_loss",
        "drop": {
            "batch_size": "implied by the tensors",
            "max_seq_length": "implied by the tensors",
            "max_label_length": "implied by the tensors",
        },
        "ranges": {
            "labels": {"low": 1, "high": "log_probs.2"},
            "input_lengths": {"low": "log_probs.0", "high": "log_probs.0+1"},
            "label_lengths": {"low": 1, "high": "labels.1+1"},
        },
    },
    "where_index": {"api": "paddle.nonzero", "references": {"paddle.nonzero": "numpy.argwhere"}},
    "accuracy": {"api": "paddle.metric.accuracy", "ranges": {"label": {"low": 0, "high": "input.1"}}},
    "shard_index": {
        "api": "paddle.shard_index",
        "set": {"index_num": 100000, "nshards": 100, "shard_id": 0},
        "ranges": {"input": {"low": 0, "high": 100000}},
    },
    # ---- same name and parameters, but integer inputs that index something ------------------
    "cross_entropy": {"ranges": {"label": {"low": 0, "high": "input.axis"}}},
    "nll_loss": {"ranges": {"label": {"low": 0, "high": "input.1"}}},
    "embedding": {"ranges": {"x": {"low": 0, "high": "weight.0"}}},
    "gather": {"ranges": {"index": {"low": 0, "high": "x.axis"}}},
    "index_select": {"ranges": {"index": {"low": 0, "high": "x.axis"}}},
    "index_sample": {"ranges": {"index": {"low": 0, "high": "x.1"}}},
    "one_hot": {
        "ranges": {"x": {"low": 0, "high": "attr:num_classes"}},
        "drop_default": {"allow_out_of_range": False},
    },
    "take_along_axis": {"ranges": {"indices": {"low": 0, "high": "arr.axis"}}},
    "put_along_axis": {"ranges": {"indices": {"low": 0, "high": "arr.axis"}}},
    "floor_divide": {
        "ranges": {"y": {"low": 1, "high": 8}},
        "references": {"paddle.floor_divide": "numpy.floor_divide"},
    },
    "sequence_mask": {"ranges": {"x": {"low": 0, "high": 8}, "maxlen": {"low": 8, "high": 9}}},
    "yolo_box": {"ranges": {"img_size": {"low": 64, "high": 640}}},
    # ---- inputs in the op's domain ---------------------------------------------------------
    "bernoulli": {"ranges": {"x": {"low": 0, "high": 1}}},
    "poisson": {"ranges": {"x": {"low": 0, "high": 1}}},
    "binary_cross_entropy": {
        "ranges": {"input": {"low": 0.05, "high": 0.95}, "label": {"low": 0, "high": 1}}
    },
    "binary_cross_entropy_with_logits": {"ranges": {"label": {"low": 0, "high": 1}}},
    "log_loss": {"ranges": {"input": {"low": 0.05, "high": 0.95}, "label": {"low": 0, "high": 1}}},
    "batch_norm": {
        "extra_inputs": {
            "running_mean": {"shape": ["x.1"]},
            "running_var": {"shape": ["x.1"], "low": 0.5, "high": 1.5},
            "weight": {"shape": ["x.1"]},
            "bias": {"shape": ["x.1"]},
        },
        "note": "running statistics, scale and shift are inputs of the functional batch_norm "
        "(the legacy test created them as parameters)",
    },
    "increment": {"drop_default": {"in_place": True}},
    "logical_not": {"references": {"paddle.logical_not": "numpy.logical_not"}},
    # ---- references of single ops -----------------------------------------------------------
    "bmm": {"references": {"paddle.bmm": "numpy.matmul"}},
    "mv": {"references": {"paddle.mv": "numpy.matmul"}},
    "matmul": {"adjust": "matmul", "references": {"paddle.matmul": "numpy.matmul"}},
    "mean": {"references": {"paddle.mean": "numpy.mean"}},
    "cumsum": {"references": {"paddle.cumsum": "numpy.cumsum"}},
    "flip": {"references": {"paddle.flip": "numpy.flip"}},
    "tril": {"references": {"paddle.tril": "numpy.tril"}},
    "triu": {"references": {"paddle.triu": "numpy.triu"}},
    "squeeze": {"references": {"paddle.squeeze": "numpy.squeeze"}},
    "unsqueeze": {"references": {"paddle.unsqueeze": "numpy.expand_dims"}},
    "cross": {"references": {"paddle.cross": "numpy.cross"}},
    "logsumexp": {"references": {"paddle.logsumexp": "scipy.special.logsumexp"}},
    "erfinv": {"references": {"paddle.erfinv": "scipy.special.erfinv"}},
    "lgamma": {"references": {"paddle.lgamma": "scipy.special.gammaln"}},
    "zeros_like": {"references": {"paddle.zeros_like": "numpy.zeros_like"}},
    "equal_all": {"references": {"paddle.equal_all": "numpy.array_equal"}},
    "set_value": {
        "api": "paddle.slice_scatter",
        "adjust": "set_value",
        "note": "set_value is the kernel of slice assignment; paddle.slice_scatter is its function",
    },
    "multiplex": {
        "ranges": {"index": {"low": 0, "high": "inputs.count"}},
        "note": "index picks one of the inputs per row: drawn in [0, number of inputs)",
    },
    # ---- control flow: the legacy test built a static program with branches ---------------------
    "cond": {
        "program": {
            "feed": ["x", "y", "input"],
            "ops": [
                {"op": "paddle.full_like", "inputs": ["input"], "attrs": {"fill_value": 10}, "out": "ten"},
                {"op": "paddle.less_than", "inputs": ["input", "ten"], "out": "pred"},
                {
                    "op": "paddle.static.nn.cond",
                    "inputs": ["pred"],
                    "branches": [
                        [{"op": "paddle.multiply", "inputs": ["x", "y"], "out": "r"}],
                        [{"op": "paddle.divide", "inputs": ["x", "y"], "out": "r"}],
                    ],
                    "out": "result",
                },
            ],
            "fetch": ["result"],
        },
        "note": "the legacy program: pred = input < 10, then cond(pred, x * y, x / y)",
    },
    "case": {
        "program": {
            "feed": ["x", "y"],
            "ops": [
                {"op": "paddle.ones", "inputs": [], "attrs": {"shape": [1]}, "out": "one"},
                {
                    "op": "paddle.full",
                    "inputs": [],
                    "attrs": {"shape": [1], "fill_value": 5.0},
                    "out": "five",
                },
                {
                    "op": "paddle.full",
                    "inputs": [],
                    "attrs": {"shape": [1], "fill_value": 10.0},
                    "out": "ten",
                },
                {"op": "paddle.less_than", "inputs": ["one", "five"], "out": "pred_1"},
                {"op": "paddle.greater_than", "inputs": ["one", "ten"], "out": "pred_2"},
                {
                    "op": "paddle.static.nn.case",
                    "inputs": ["pred_1", "pred_2"],
                    "branches": [_xy_branch("add"), _xy_branch("subtract")],
                    "default": _xy_branch("multiply"),
                    "out": "result",
                },
            ],
            "fetch": ["result"],
        },
        "note": "the legacy program: case([(1 < 5, x + y), (1 > 10, x - y)], default x * y)",
    },
    "switch_case": {
        "program": {
            "feed": ["x", "y"],
            "ops": [
                {
                    "op": "paddle.zeros",
                    "inputs": [],
                    "attrs": {"shape": [1], "dtype": "int32"},
                    "out": "zero",
                },
                {
                    "op": "paddle.static.nn.switch_case",
                    "inputs": ["zero"],
                    "branches": [_xy_branch("add"), _xy_branch("subtract")],
                    "default": _xy_branch("multiply"),
                    "out": "result",
                },
            ],
            "fetch": ["result"],
        },
        "note": "the legacy program: switch_case(0, {0: x + y, 1: x - y}, default x * y)",
    },
    # ---- layers: the legacy test built a layer that created its own weights ---------------------
    "conv3d_transpose": {
        "layer": "paddle.nn.Conv3DTranspose",
        "rename": {"input": "x"},
        "args": _CONV_TRANSPOSE_ARGS,
        "drop_default": {"act": None},
        "note": "fluid's conv3d_transpose layer (it created its weight and bias) as paddle.nn.Conv3DTranspose",
    },
    "depthwise_conv2d_transpose": {
        "layer": "paddle.nn.Conv2DTranspose",
        "rename": {"input": "x"},
        "args": _CONV_TRANSPOSE_ARGS,
        "drop_default": {"act": None},
        "note": "fluid's depthwise conv2d_transpose layer (groups = its channels) as paddle.nn.Conv2DTranspose",
    },
    "sync_batch_norm": {
        "layer": "paddle.nn.SyncBatchNorm",
        "args": {
            "num_features": "x.1",
            "momentum": "attr:momentum",
            "epsilon": "attr:epsilon",
            "data_format": "attr:data_format",
        },
        "drop": {"training": "a layer built for a case is in training mode, as the legacy test's was"},
        "places": ["gpu"],
        "note": "paddle registers sync_batch_norm for GPU only; on one device it is batch norm with its sync",
    },
    # ---- inputs with values beyond a range ----------------------------------------------------
    "cholesky": {
        "api": "paddle.linalg.cholesky",
        "adjust": "gram",
        "values": {"x": "positive_definite"},
        "note": "the legacy test timed x @ x.T + 1e-3 before cholesky; here x is made positive definite "
        "when generated, and only cholesky is timed",
    },
    "segment_pool": {
        "apis": {
            "segment_sum": "paddle.geometric.segment_sum",
            "segment_mean": "paddle.geometric.segment_mean",
            "segment_max": "paddle.geometric.segment_max",
            "segment_min": "paddle.geometric.segment_min",
        },
        "rename": {"x": "data"},
        "ranges": {"segment_ids": {"low": 0, "high": "data.0"}},
        "values": {"segment_ids": "sorted"},
        "note": "segment ids sorted in [0, rows) (the legacy test drew them in [0, rows/20); an index input is drawn within the dimension it indexes)",
    },
    "roi_align": _ROI,
    "roi_pool": _ROI,
    "psroi_pool": {
        "extra_inputs": {"boxes": {"shape": [3, 4]}, "boxes_num": {"shape": ["x.0"], "dtype": "int32"}},
        "values": {"boxes": {"boxes_in": "x"}, "boxes_num": {"sum_of": "boxes"}},
        "note": "3 boxes over the batch, as the legacy test built them (its fixed boxes drawn here anywhere in the image)",
    },
    # ---- no operator to time ------------------------------------------------------------------
    "data_norm": {"skip": [REMOVED, "fluid's data_norm layer has no API in paddle 3 (dynamic or static)"]},
    "affine_channel": {"skip": [REMOVED, "fluid's affine_channel has no API in paddle 3"]},
    "truncated_gaussian_random": {
        "skip": [
            NOT_AN_OP,
            "the legacy test times paddle.nn.initializer.TruncatedNormal filling a parameter (an initializer)",
        ]
    },
    "squared_l2_norm": {
        "skip": [PRIVATE, "squared_l2_norm is only reachable as the private paddle._C_ops.squared_l2_norm"]
    },
    "clip_by_norm": {
        "skip": [
            PRIVATE,
            "paddle.nn.clip_by_norm is gone; clip_by_norm is only the private paddle._C_ops one",
        ]
    },
}
