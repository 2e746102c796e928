"""torch_geometric, imported once without its import-time deprecation notice.

torch_geometric 2.x decorates a few functions with ``torch.jit.script`` at import, and
recent torch answers each with a ``FutureWarning`` that says nothing to a user of this
package. Only that message, only during this import, is silenced.
"""

import warnings

with warnings.catch_warnings():
    warnings.filterwarnings(
        "ignore", message=r"`torch\.jit\.script` is deprecated", category=FutureWarning
    )
    import torch_geometric
    import torch_geometric.nn  # noqa: F401
