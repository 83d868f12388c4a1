"""P3-style training (Gandhi and Iyer, OSDI 2021): features by columns, push-pull first layer.

When the input features are wide and the hidden layers narrow, moving the
feature rows of a minibatch to the rank that trains it dominates a step.
P3 splits the feature matrix by **columns** instead: rank ``r`` of ``p``
holds columns ``[f*r//p, f*(r+1)//p)`` of every vertex.  The first layer,
linear in its input, then runs model-parallel:

* **push**: every rank multiplies its column slice of the layer-1 input
  rows of *every* minibatch of the step by its slice of the first-layer
  weight, ``x[ids, cols_r] @ W[cols_r, :]`` (a partial activation of width
  ``hidden``);
* **pull**: one reduce-scatter sums the partial activations over the
  ranks and hands each rank those of its own minibatch;
* layers 2..L run data-parallel as usual;
* backward: one all-gather gives every rank the gradient of every
  minibatch's first-layer output, and each rank computes the gradient of
  its own weight slice, ``x[ids, cols_r]^T @ G_all``.  The slices are not
  all-reduced: each rank owns its slice (every other parameter is).

Communication then scales with the hidden width, not the feature width.
Every rank needs the layer-1 input vertices of every minibatch of the
step; sampling is rank-invariant (the same seeds give the same samples on
every rank), so each rank can sample them all without communicating.

The package, one job per module (every name below is importable from
``sampling.train.p3`` itself):

* ``columns``: ``column_range(f, p, r)``, the columns rank ``r`` holds,
  and ``ColumnFeatureStore``, the column-partitioned store (dense numpy,
  or scipy CSR for sparse features such as Cora's bag of words);
* ``pushpull``: ``PushPull``, the torch.autograd.Function (push,
  reduce-scatter, and the all-gather backward), ``push_pull`` its
  functional form, and ``PushPullPlan``, where each rank's rows lie;
* ``inputs``: ``StepInput`` and ``share_inputs``, every rank's layer-1
  input vertices by one all-gather, for ranks that sample only their own
  minibatches;
* ``model``: ``P3Model``, a ``sampling.models`` GraphSAGE / GCN whose
  first layer runs push-pull;
* ``traffic``: ``byte_model``, bytes per step of the row fetch and of
  push-pull.

Bytes are counted by ``spla.comm`` under ``'p3.pull'`` (the reduce-scatter,
each rank's share of the summed buffer it does not keep), ``'p3.gradient'``
(the backward all-gather) and ``'p3.inputs'`` (``share_inputs``).
"""

from sampling.train.p3.columns import ColumnFeatureStore, column_range
from sampling.train.p3.inputs import StepInput, share_inputs
from sampling.train.p3.model import P3Model
from sampling.train.p3.pushpull import PushPull, PushPullPlan, push_pull
from sampling.train.p3.traffic import byte_model

__all__ = ["column_range", "ColumnFeatureStore", "PushPullPlan", "PushPull", "push_pull",
           "StepInput", "share_inputs", "P3Model", "byte_model"]
