def einsum(*a, **k):
    raise RuntimeError("einsum is being written")
