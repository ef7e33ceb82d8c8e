"""Make `import torchvision` (needed by open_clip) work with the CPU build of torch.

The torchvision 0.28.0 wheel on PyPI is built against CUDA torch. With the CPU
build of torch its compiled extension (_C.so) does not load, and importing
torchvision then fails in its fake-kernel registrations with
"operator torchvision::nms does not exist". Quire never calls these operators
(open_clip only needs torchvision's image transforms), so declaring the two
operator schemas is enough for the import to succeed. Where the extension does
load (a matching GPU install), it is used and nothing is declared.

Import this module before anything imports torchvision.
"""

import importlib.util
from pathlib import Path

import torch

_SCHEMAS = [
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
]
_library = None  # kept alive: the declarations last as long as this object


def ensure_torchvision_ops() -> None:
    global _library
    if _library is not None or hasattr(torch.ops.torchvision, "nms"):
        return
    spec = importlib.util.find_spec("torchvision")
    if spec is not None and spec.origin is not None:
        try:
            torch.ops.load_library(str(Path(spec.origin).parent / "_C.so"))
            if hasattr(torch.ops.torchvision, "nms"):
                return
        except OSError:
            pass  # the CUDA-built extension on CPU torch: declare the schemas instead
    _library = torch.library.Library("torchvision", "DEF")
    for schema in _SCHEMAS:
        _library.define(schema)


ensure_torchvision_ops()
