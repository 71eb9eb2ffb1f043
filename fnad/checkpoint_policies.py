"""Policies for fnad.checkpoint(fun, policy=...): which values the forward pass keeps
for the backward pass (the rest is recomputed there from fun's inputs).

A policy is called on each operation of the checkpointed function as
policy(primitive, *input_avals, **params) and returns True where that operation's
result is saved. Values are named for the name-based policies with
fnad.ad_checkpoint.checkpoint_name(x, "name"). Offloading to host memory (JAX's
offload_* policies) is saving here: fnad's values already live in host memory.
"""
from .primitives.dot import dot_general_p
from .transforms.custom import checkpoint_name_p


def everything_saveable(*_, **__):
    """Save every intermediate: no recomputation (plain reverse mode)."""
    return True


def nothing_saveable(*_, **__):
    """Save only the inputs: recompute everything (checkpoint's default)."""
    return False


def dots_saveable(prim, *_, **__):
    """Save the results of matrix products, recompute the cheap elementwise work."""
    return prim is dot_general_p


checkpoint_dots = dots_saveable


def dots_with_no_batch_dims_saveable(prim, *_, **params):
    """Save the results of matrix products that have no batch dimensions."""
    if prim is not dot_general_p:
        return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable


def _named(prim, params):
    return params["name"] if prim is checkpoint_name_p else None


def save_only_these_names(*names_which_can_be_saved):
    """Save the values named (with checkpoint_name) in `names_which_can_be_saved`."""
    names = frozenset(names_which_can_be_saved)
    return lambda prim, *_, **params: _named(prim, params) in names


def save_any_names_but_these(*names_not_to_save):
    """Save every named value except those named in `names_not_to_save`."""
    names = frozenset(names_not_to_save)
    return lambda prim, *_, **params: prim is checkpoint_name_p and params["name"] not in names


def save_anything_except_these_names(*names_not_to_save):
    """Save every value except those named in `names_not_to_save`."""
    names = frozenset(names_not_to_save)
    return lambda prim, *_, **params: _named(prim, params) not in names


def save_from_both_policies(policy_1, policy_2):
    """Save what either policy saves."""
    return lambda prim, *args, **params: bool(policy_1(prim, *args, **params)
                                              or policy_2(prim, *args, **params))


def save_and_offload_only_these_names(*, names_which_can_be_saved,
                                      names_which_can_be_offloaded, offload_src=None,
                                      offload_dst=None):
    """JAX saves the first names on the device and moves the others to host memory;
    fnad's memory is the host's, so both are saved."""
    return save_only_these_names(*names_which_can_be_saved, *names_which_can_be_offloaded)


def offload_dot_with_no_batch_dims(offload_src=None, offload_dst=None):
    """JAX moves these matrix products to host memory; here they are saved."""
    return dots_with_no_batch_dims_saveable
