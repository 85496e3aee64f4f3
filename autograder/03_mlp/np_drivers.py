"""Sandbox drivers for numpy_mlp.py. They run inside the sandbox with torch blocked, so this
module imports NumPy only. The grader imports it too (to pass its functions to student.run).

Each driver calls the student's code and returns plain data; the checks happen in the grader.
"""

import numpy as np


def forward_logits(params, X):
    """Call forward(params, X) and return only the logits (the cache is the student's business)."""
    import numpy_mlp

    result = numpy_mlp.forward(dict(params), X)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"forward must return (logits, cache); it returned {type(result).__name__}"
                        + (f" of length {len(result)}" if isinstance(result, (tuple, list)) else ""))
    return np.asarray(result[0])


def forward_then_backward(params, X, grad_logits):
    """forward(params, X), then backward(params, cache, grad_logits) on the cache it returned."""
    import numpy_mlp

    try:
        result = numpy_mlp.forward(dict(params), X)
        _, cache = result
    except Exception as error:
        raise RuntimeError(
            f"forward(params, X) failed ({type(error).__name__}: {error}) before backward could "
            "run: backward is graded on the cache your forward returns, so make forward work first"
        ) from error
    grads = numpy_mlp.backward(dict(params), cache, grad_logits)
    if not isinstance(grads, dict):
        raise TypeError(f"backward must return a dict of gradients; it returned {type(grads).__name__}")
    return {str(key): np.asarray(value) for key, value in grads.items()}


def sgd_update_checked(params, grads, lr):
    """Call sgd_update and hand back, besides its result, the arrays it was given and the dict as it
    now is: objects, not a verdict. The grader compares them with the copy it kept (it judges
    whether anything changed in place; nothing here calls a function student code could replace)."""
    import numpy_mlp

    given = list(params.items())  # the array objects themselves: their memory is the evidence
    result = numpy_mlp.sgd_update(params, grads, lr)
    if not isinstance(result, dict):
        raise TypeError(f"sgd_update must return a dict; it returned {type(result).__name__}")
    return {
        "result": {str(key): np.asarray(value) for key, value in result.items()},
        "given_after": {key: value for key, value in given},
        "dict_after": {str(key): value for key, value in params.items()},
    }
