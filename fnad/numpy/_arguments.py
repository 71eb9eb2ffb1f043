"""Checks of numpy arguments that fnad accepts only in one form."""


def refuse_out(name, out):
    """numpy's out= writes into an array; fnad arrays are immutable."""
    if out is not None:
        raise TypeError(f"{name}: out= is not supported: fnad arrays are immutable, "
                        f"use the returned value")
