"""One optimisation step's synchronisation: gradients averaged over the ranks by seeds.

Data parallelism with minibatches of unequal size: each rank sums its
loss over its seeds, the gradients, the losses and the seed counts are
summed over the ranks in one Allreduce, and every gradient is divided by
the total seed count, so a step equals one step on the union of the
ranks' minibatches.  The loss rides in the same message, so every rank
sees the same total and stops together when it is not finite.
"""

import math

from spla import comm as C
from spla.exceptions import InvalidValue


class GradientSync:
    """Averages the gradients of ``params`` over ``comm`` by seed counts.

    Parameters
    ----------
    torch : module
        ``torch``.
    params : list of torch.nn.Parameter
        The trainable parameters.
    comm : MPI communicator or None
    local : set of int, optional
        ``id`` of parameters whose gradients are complete on this rank
        already (P3's first-layer column slices: push-pull's backward sums
        every rank's minibatch); only their division by the step's seeds
        is shared.

    Examples
    --------
    >>> import torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> (w * torch.tensor([3.0, 6.0])).sum().backward()
    >>> GradientSync(torch, [w], None).step(n_seeds=3, loss=1.0, where="step 1")
    3.0
    >>> w.grad.tolist()
    [1.0, 2.0]
    """

    def __init__(self, torch, params, comm, local=()):
        self.torch = torch
        self.comm = comm
        self.size = 1 if comm is None else comm.Get_size()
        self.local = [p for p in params if id(p) in local]
        self.shared = [p for p in params if id(p) not in local]

    def step(self, n_seeds, loss, where):
        """Collective: sum gradients, seed counts and losses; divide by the seeds.

        Returns the total seed count of the step.  Raises
        ``FloatingPointError`` on every rank when the summed loss is not
        finite: NaN features or labels slipped past the checks, or the
        learning rate made the model diverge (training on would only print
        ``loss nan`` and exit 0).
        """
        torch = self.torch
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.shared]
        for p in self.local:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        if self.size == 1:
            total = float(n_seeds)
            self._check_loss(float(loss), where)
            if total > 0:
                for p, g in zip(self.shared, grads):
                    p.grad = g / total
                self._divide_local(total)
            return total
        flat = torch.cat([g.reshape(-1) for g in grads] +
                         [torch.tensor([float(loss), float(n_seeds)], device=grads[0].device)])
        buf = flat.detach().to("cpu", torch.float32).numpy().copy()
        out = C.allreduce_array(self.comm, buf, "sum", "train.allreduce")
        self._check_loss(float(out[-2]), where)
        total = float(out[-1])
        if total > 0:
            res = torch.from_numpy(out[:-2] / total).to(grads[0].device)
            off = 0
            for p in self.shared:
                k = p.numel()
                p.grad = res[off:off + k].view_as(p).to(p.dtype).clone()
                off += k
            self._divide_local(total)
        return total

    def _divide_local(self, total):
        for p in self.local:
            p.grad /= total

    def _check_loss(self, total_loss, where):
        if math.isfinite(total_loss):
            return
        # Every rank holds the same summed loss: all raise here, and the
        # collective block marks the error as raised everywhere.
        with C.collective_checks(self.comm):
            raise FloatingPointError(
                f"Trainer.train_epoch: the training loss must be finite; got {total_loss} "
                f"(summed over the ranks) at {where}.  Check the features and labels for "
                "NaN or infinite values, or lower --lr")


def broadcast_model(torch, comm, model):
    """Collective: rank 0's parameters and buffers on every rank (one broadcast of their bytes).

    Every rank then starts from the same model however each built it; the
    architectures must match (as many tensors and bytes), else every rank
    raises ``InvalidValue``.
    """
    if comm is None or comm.Get_size() == 1:
        return
    tensors = list(model.parameters()) + list(model.buffers())
    nbytes = [t.numel() * t.element_size() for t in tensors]
    C.check_same(comm, "Trainer", "model", [len(tensors), sum(nbytes)],
                 expected="the same architecture on every rank (as many parameter and "
                          "buffer tensors and bytes)", cls=InvalidValue,
                 show=lambda v: f"{v[0]} tensors of {v[1]} bytes")
    if not tensors:
        return
    flat = torch.cat([t.detach().reshape(-1).contiguous().cpu().view(torch.uint8)
                      for t in tensors])
    buf = C.bcast_array(comm, flat.numpy().copy(), 0, "train.broadcast")
    if comm.Get_rank() == 0:
        return
    data, off = torch.from_numpy(buf), 0
    with torch.no_grad():
        for t, nb in zip(tensors, nbytes):
            t.copy_(data[off:off + nb].view(t.dtype).view(t.shape))
            off += nb


__all__ = ["GradientSync", "broadcast_model"]
