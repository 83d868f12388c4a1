"""The paragraph a run starts with: what it trains, on what, with which options.

One job: turn a built ``Trainer`` into the words ``Trainer.describe()``
returns and the main job prints before its table, including the hints a
newcomer needs (one process holding a partitioned graph, a prefetch with
nothing to overlap).
"""

import sys


def describe_run(trainer):
    """One paragraph: the dataset, and what the run uses (sampler, model, layout, threads).

    Examples
    --------
    >>> from sampling.train import TrainOptions, Trainer
    >>> t = Trainer(TrainOptions(epochs=1, threads=1))
    >>> print(describe_run(t).splitlines()[1][:40])
    sampler sage (fanouts 10,10), model SAGE
    """
    o, s = trainer.opts, trainer.sampler
    mode = (f"graph {o.graph}" + (f", c = {o.replication}" if o.graph == "partitioned"
                                  else ""))
    if trainer.given_sampler:
        shown = f"{trainer.depth} layers"
        for attr in ("fanouts", "layer_sizes"):
            sizes = getattr(s, attr, None)
            if sizes:
                shown = f"{attr.replace('_', ' ')} {','.join(map(str, sizes))}"
                break
        where = ("on a DistMatrix" if s.D is not None else
                 "local graph" + (", each rank samples its share" if trainer._split else ""))
        sampler = (f"sampler {type(s).__name__} instance ({shown}, {where}; "
                   "opts.sampler, fanouts and layer_sizes not used)")
        mode = f"features {o.graph}" + (f", c = {o.replication}"
                                        if o.graph == "partitioned" else "")
    else:
        what = "fanouts" if o.sampler == "sage" else "layer sizes"
        sampler = f"sampler {o.sampler} ({what} {','.join(map(str, o.sizes))})"
    if trainer.given_model:
        model = (f"model {type(trainer._net).__name__} (given; opts.hidden and dropout "
                 "not used)")
    else:
        model = f"model {type(trainer._net).__name__} {trainer.depth} layers x {o.hidden}"
    if trainer.columns:
        lo, hi = trainer.store.columns
        mode += (f", features columns (P3 push-pull first layer; columns {lo}:{hi} of "
                 f"{trainer.store.num_features} on rank {trainer.rank})")
    if trainer._cache_fraction() > 0:
        st = trainer.store.cache_stats()
        mode += (f", feature cache {trainer.store.cache_fraction:g} by {o.cache_policy} "
                 f"({st.cached_rows} rows, {st.memory_bytes / 1e6:.2f} MB per rank)")
    if o.graph == "partitioned" and trainer.size == 1:
        mode += (" (one process holds the one part: start P processes with "
                 "`mpiexec -n P python -m sampling.train ...` for P parts)")
    if o.prefetch and trainer._epoch_steps() == 1:
        mode += (f", --prefetch {o.prefetch} has nothing to overlap (an epoch is one "
                 "minibatch per rank: lower --batch-size for more)")
    text = (f"{trainer.dataset!r}\n"
            f"{sampler}, {model}, batch "
            f"{o.batch_size} ({trainer.minibatch_size} per rank), bulk {trainer.bulk_size}, "
            f"{trainer.size} rank(s), {mode}, "
            f"device {_device(trainer)}, threads: {trainer.threads} numba, "
            f"{trainer.torch_threads} torch")
    return "\n".join([text] + trainer.partition_report())


def _device(trainer):
    """The device, and on a GPU where the graph is sampled (``--sample-on auto``
    chooses) and the device-memory cap, if any."""
    o = trainer.opts
    text = o.device
    where = getattr(trainer, "placement", None)
    cap = getattr(trainer, "device_cap", None)
    notes = ([f"sampling on {where}"] if where else []) + (
        [f"device memory capped at {cap / 1e6:.1f} MB"] if cap else [])
    return text + (f" ({', '.join(notes)})" if notes else "")


def progress_bar(show, total, epoch):
    """A tqdm bar on stderr over the epoch's steps (rank 0), or None."""
    if not show:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    # leave=False: the bar is cleared when closed, before the epoch's row
    # is printed, so the table stays clean.
    return tqdm(total=total, desc=f"epoch {epoch + 1}", unit="minibatch",
                file=sys.stderr, leave=False)


def wants_progress(progress):
    """``progress`` if set, else whether stderr (where the bar goes) is a terminal."""
    if progress is not None:
        return bool(progress)
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


__all__ = ["describe_run", "progress_bar", "wants_progress"]
