"""Malformed CSR structure for the tests that check it raises."""

FAULTS = ["index", "negative", "indptr"]


def broken(indices, indptr, fault, cols):
    """Copies of (indices, indptr) with one fault: an index equal to ``cols``
    ("index"), a negative index ("negative"), or indptr decreasing at row 20
    ("indptr": the matrix needs 23 rows or more)."""
    indices, indptr = indices.copy(), indptr.copy()
    if fault == "index":
        indices[len(indices) // 2] = cols
    elif fault == "negative":
        indices[-1] = -1
    else:
        indptr[20] = indptr[22] + 1
    return indices, indptr
