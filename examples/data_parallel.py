"""Data-parallel training over MPI processes: the digits CNN of `python -m fnad.demo`,
one process per core (or device, or machine)::

    mpiexec -n 2 python examples/data_parallel.py          # (plain `python`: 1 process)

Every process holds the same parameters and optimizer state (replicated) and trains on
its own part of each epoch (sharded with fnad.data.batches(shard=...)); the jitted
step averages the gradients over the process axis with one `lax.pmean` (one MPI
Allreduce for every leaf), so all processes apply the same update and stay identical,
as PyTorch's DistributedDataParallel does. Process 0 alone writes a checkpoint after
each epoch; a restarted job reads it on every process and resumes from there (this
script shows it by training part of the epochs, then resuming for the rest).
"""
import argparse
import os
import sys
import tempfile

import numpy as np

import fnad
import fnad.numpy as fnp
from fnad import lax, nn, optim, random
from fnad.demo import MODELS, accuracy

AXIS = "processes"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size")
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--output-dir", default=None, help="checkpoint directory "
                        "(default: a fresh temporary one)")
    parser.add_argument("--quick", action="store_true", help="2 epochs")
    return parser.parse_args(argv)


def make_step(apply, opt):
    def loss_fn(params, x, y):
        return nn.softmax_cross_entropy(apply(params, x), y)

    def local_step(params, opt_state, x, y):
        loss, grads = fnad.value_and_grad(loss_fn)(params, x, y)
        # the shards are equally sized, so the mean of the processes' mean gradients is
        # the gradient of the global batch's mean loss
        grads, loss = lax.pmean((grads, loss), AXIS)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss
    return fnad.jit(fnad.distributed.shard_map(local_step, AXIS))


def train(args, until_epoch, checkpoint):
    """Train up to `until_epoch`, resuming from `checkpoint` if it exists."""
    rank, count = fnad.distributed.process_index(), fnad.distributed.process_count()
    (train_x, train_y), (test_x, test_y) = fnad.datasets.digits("train"), \
        fnad.datasets.digits("test")
    train_x, test_x = train_x[..., None], test_x[..., None]
    init, apply = MODELS["cnn"]()
    key = random.key(0)                       # the same key everywhere: same parameters
    _, params = init(key, (-1,) + train_x.shape[1:])
    opt = optim.adam(args.learning_rate)
    opt_state, first = opt.init(params), 1
    if os.path.exists(checkpoint):            # every process reads process 0's file
        saved = fnad.io.load(checkpoint, like={"params": params, "opt_state": opt_state,
                                               "epoch": 0})
        params, opt_state, first = saved["params"], saved["opt_state"], int(saved["epoch"]) + 1
        if rank == 0:
            print(f"resumed from {checkpoint} after epoch {first - 1}")
    step = make_step(apply, opt)
    for epoch in range(first, until_epoch + 1):
        losses = []
        for x, y in fnad.data.batches((train_x, train_y), args.batch_size // count,
                                      key=random.fold_in(key, epoch), shard=(rank, count)):
            params, opt_state, loss = step(params, opt_state, x, y)
            losses.append(float(loss))
        if rank == 0:
            fnad.io.save(checkpoint, {"params": params, "opt_state": opt_state,
                                      "epoch": epoch})      # atomic: never half-written
            print(f"epoch {epoch}: loss {np.mean(losses):.4f}, test accuracy "
                  f"{accuracy(apply, params, test_x, test_y):.4f} ({count} processes)")
    return apply, params, (test_x, test_y)


def main(argv=None):
    args = parse_args(argv)
    try:
        fnad.distributed.initialize()
    except fnad.distributed.DistributedError as err:
        print(f"skipped: {err}")
        return
    if args.quick:
        args.epochs = 2
    directory = args.output_dir or tempfile.mkdtemp(prefix="fnad-data-parallel-")
    if fnad.distributed.process_count() > 1 and args.output_dir is None:
        # one directory for all: process 0's choice, sent to the others
        directory = fnad.distributed.communicator().bcast(directory, root=0)
    checkpoint = os.path.join(directory, "checkpoint.fnad")
    if fnad.distributed.process_index() == 0:
        os.makedirs(directory, exist_ok=True)
    fnad.distributed.communicator().Barrier()
    # train part of the way, then resume from the checkpoint as a restarted job would
    train(args, args.epochs // 2, checkpoint)
    fnad.distributed.communicator().Barrier()       # process 0 has written it
    apply, params, (test_x, test_y) = train(args, args.epochs, checkpoint)

    # the replicas never drifted apart: every process holds the same parameters
    flat = fnp.concatenate([fnp.ravel(p) for p in fnad.tree_util.tree_leaves(params)])
    spread = fnad.distributed.shard_map(lambda v: lax.pmax(v, AXIS) - lax.pmin(v, AXIS),
                                        AXIS)(flat)
    if float(fnp.max(spread)) != 0.0:
        raise SystemExit("the processes' parameters differ")
    final = accuracy(apply, params, test_x, test_y)
    if fnad.distributed.process_index() == 0:
        print(f"final test accuracy {final:.4f}")
    if final < (0.8 if args.quick else 0.95):
        raise SystemExit(f"test accuracy {final:.4f} is too low")


if __name__ == "__main__":
    main(sys.argv[1:])
