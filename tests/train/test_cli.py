"""The command line of ``python -m sampling.train``, run in-process through ``main``.

* options that do not apply to the run are refused with one ``error:``
  line and exit status 2 (and so are bad values: ``--layer-sizes -1``, a
  dataset path that does not exist, ...);
* ``--fanouts`` takes -1 entries, ``--dataset`` takes .npz paths and
  ``ogbn-*`` names with ``--root``, and a left-out option gets
  ``TrainOptions``' default;
* ``--help`` has a help string for every option and shows defaults without
  ``(default: None)``;
* the tqdm progress bar goes to stderr with ``--progress`` and is off by
  default when stderr is not a terminal.
"""

import os
import re
import shutil
from dataclasses import fields

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("torch")

from sampling.datasets import DATA_DIR  # noqa: E402
from sampling.train import TrainOptions, build_parser, main, options_from_args  # noqa: E402
from sampling.train.cli import _fanout_list, _size_list  # noqa: E402

LAST_LINE = re.compile(r"^test accuracy: (0\.\d{4}|1\.0000)$")
QUICK = ["--epochs", "1", "--threads", "1", "--bulk", "4"]


def run_main(args, capsys):
    """(exit status, stdout, stderr) of ``main(args)`` in this process."""
    try:
        rc = main(list(args))
    except SystemExit as exc:  # argparse's own errors and --help
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def options(*args):
    return options_from_args(build_parser().parse_args(list(args)))


@pytest.fixture
def npz(tmp_path):
    path = tmp_path / "mycora.npz"
    shutil.copy(os.path.join(DATA_DIR, "cora.npz"), path)
    return str(path)


# -- rejections --------------------------------------------------------------------------------

REJECTED = [
    (["--sampler", "ladies", "--fanouts", "5,5"],
     "--fanouts applies to --sampler sage; --sampler ladies draws a number of vertices per "
     "layer: use --layer-sizes"),
    (["--sampler", "fastgcn", "--fanouts", "5"], "--fanouts applies to --sampler sage"),
    (["--layer-sizes", "64,64"], "--layer-sizes applies to --sampler ladies and fastgcn"),
    (["--sampler", "sage", "--layer-sizes", "64"], "--layer-sizes applies to --sampler ladies"),
    (["--replication", "2"], "--replication applies to --graph partitioned"),
    (["--replication", "1", "--graph", "replicated"], "--replication applies to --graph "
                                                      "partitioned"),
    (["--partition", "metis"], "--partition applies to --graph partitioned (a replicated "
                               "graph has no parts); drop it or add --graph partitioned"),
    (["--graph", "replicated", "--split", "part"], "--split applies to --graph partitioned"),
    (["--graph", "partitioned", "--partition", "random"],
     "argument --partition: invalid choice: 'random'"),
    (["--graph", "partitioned", "--split", "local"], "argument --split: invalid choice"),
    (["--root", "{tmp}"], "--root applies to ogbn-* datasets (it is where they are "
                          "downloaded); 'cora' is not one: drop --root"),
    (["--dataset", "rmat:8", "--root", "{tmp}"], "'rmat:8' is not one"),
    (["--dataset", "{npz}", "--root", "{tmp}"], "--root applies to ogbn-* datasets"),
    (["--fanouts", "5", "--hidden", "16"], "--hidden applies to models of two layers or more"),
    (["--sampler", "ladies", "--layer-sizes", "32", "--hidden", "16"], "--hidden applies"),
    (["--sampler", "ladies", "--layer-sizes", "-1,64"],
     "argument --layer-sizes: expected comma-separated positive integers, got '-1,64': -1 "
     "(all neighbours) applies to --fanouts only"),
    (["--sampler", "ladies", "--layer-sizes", "-1"], "-1 (all neighbours) applies to --fanouts "
                                                     "only"),
    (["--fanouts", "10,-2"], "argument --fanouts: expected comma-separated positive integers "
                             "or -1 (all neighbours), got '10,-2'"),
    (["--fanouts", "0"], "positive integers or -1"),
    (["--fanouts", ","], "positive integers or -1"),
    (["--dataset", "{tmp}/missing.npz"], "argument --dataset: no such file: "),
    (["--dataset", "{tmp}"], "argument --dataset: expected an .npz file"),
    (["--dataset", "pubmed"], "unknown dataset 'pubmed'; use cora, citeseer, rmat:SCALE"),
    (["--dataset", "rmat:40"], "unknown dataset 'rmat:40'"),
    (["--dataset", "ogbn-arxiv", "--root", "{npz}"], "argument --root: expected a directory"),
    (["--progress", "--no-progress"], "argument --no-progress: not allowed with argument "
                                      "--progress"),
    (["--bulk", "2", "--memory-budget", "1G"], "not allowed with argument"),
    (["--fanouts", "10,10", "--layers", "3"], "--fanouts has 2 entries but the model has "
                                              "--layers 3"),
    (["--epochs", "0"], "expected a positive integer, got '0'"),
    (["--feature-cache", "0.1"], "--feature-cache applies to --graph partitioned (replicated "
                                 "features are all local already); drop it or add --graph "
                                 "partitioned"),
    (["--graph", "replicated", "--feature-cache", "0"], "--feature-cache applies to --graph "
                                                        "partitioned"),
    (["--graph", "partitioned", "--cache-policy", "frequency"],
     "--cache-policy applies to --feature-cache; drop it or add --feature-cache FRACTION"),
    (["--graph", "partitioned", "--feature-cache", "1.5"],
     "argument --feature-cache: expected a fraction in [0, 1], got '1.5'"),
    (["--graph", "partitioned", "--feature-cache", "ten"], "expected a fraction in [0, 1]"),
    (["--graph", "partitioned", "--feature-cache", "0.1", "--cache-policy", "lru"],
     "argument --cache-policy: invalid choice: 'lru'"),
    (["--features", "columns", "--device", "cuda", "--sample-on", "uva"],
     "--sample-on uva applies to --features rows (with --features columns the first layer "
     "reads the minibatches' inputs on the host, where the CPU samples them); use "
     "--sample-on cpu or auto"),
    (["--features", "columns", "--graph", "partitioned", "--feature-cache", "0.1"],
     "--feature-cache applies to --features rows"),
    (["--features", "cols"], "argument --features: invalid choice: 'cols'"),
    (["--mode", "bns", "--features", "columns"], "--features applies to --mode sampled"),
    (["--partition", "hash"], "--partition applies to --graph partitioned"),
]


@pytest.mark.parametrize("args, message", REJECTED, ids=[" ".join(a) for a, _ in REJECTED])
def test_rejected_with_one_error_line_and_exit_2(args, message, tmp_path, npz, capsys):
    args = [a.format(tmp=tmp_path, npz=npz) for a in args]
    rc, out, err = run_main(args + ["--threads", "1"], capsys)
    assert rc == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert message.format(tmp=tmp_path) in lines[0], lines[0]
    assert out == ""


def test_p3_columns_on_a_gpu_it_cannot_see_names_the_gpu(capsys):
    # --features columns trains on a GPU (its first layer staged through the
    # host): without one the missing GPU is the error, not the option.
    import torch
    if torch.cuda.is_available():
        pytest.skip("checks the error of a machine without a CUDA GPU")
    rc, out, err = run_main(["--features", "columns", "--device", "cuda"] + QUICK, capsys)
    assert rc == 2 and "--device cuda: this PyTorch build sees no CUDA GPU" in err, err


# -- accepted values ---------------------------------------------------------------------------

def test_left_out_options_get_the_defaults():
    assert options() == TrainOptions()
    args = build_parser().parse_args([])
    # None means "not given": that is how options that do not apply are found.
    assert all(v is None for v in vars(args).values()), vars(args)


def test_every_option_of_trainoptions_has_a_flag():
    dests = {a.dest for a in build_parser()._actions}
    assert {f.name for f in fields(TrainOptions)} <= dests


@pytest.mark.parametrize("args, fanouts", [
    (["--fanouts", "-1,5"], (-1, 5)),
    (["--fanouts", "-1"], (-1,)),
    (["--fanouts=-1,-1"], (-1, -1)),
    (["--fanouts", "15,-1,5", "--layers", "3"], (15, -1, 5)),
    (["--fanouts", " 4, 3 "], (4, 3)),
])
def test_fanouts_take_minus_one(args, fanouts):
    opts = options(*args)
    assert opts.fanouts == fanouts and opts.sizes == fanouts


@given(st.lists(st.integers(-3, 40), min_size=1, max_size=6))
def test_fanout_and_size_lists_follow_their_rules(values):
    text = ",".join(map(str, values))
    fanouts_ok = all(v >= 1 or v == -1 for v in values)
    sizes_ok = all(v >= 1 for v in values)
    for parse, ok in ((_fanout_list, fanouts_ok), (_size_list, sizes_ok)):
        try:
            got = parse(text)
        except Exception:  # noqa: BLE001 - argparse.ArgumentTypeError
            got = None
        assert (got == tuple(values)) if ok else (got is None)
    # and through the parser, whatever the first value's sign
    parser = build_parser()
    if fanouts_ok:
        assert parser.parse_args(["--fanouts", text]).fanouts == tuple(values)


def test_dataset_paths_and_ogb_names(npz, tmp_path):
    assert options("--dataset", npz).dataset == npz
    assert options("--dataset", "CiteSeer").dataset == "citeseer"
    opts = options("--dataset", "ogbn-arxiv", "--root", str(tmp_path))
    assert (opts.dataset, opts.root) == ("ogbn-arxiv", str(tmp_path))
    assert options("--dataset", "OGBN-Products").dataset == "ogbn-products"
    assert options("--dataset", "ogbn-arxiv").root is None  # the loader's default root
    # a root that does not exist yet is fine: the download creates it
    assert options("--dataset", "ogbn-mag", "--root", str(tmp_path / "new")).root == \
        str(tmp_path / "new")


def test_options_that_apply_are_accepted():
    assert options("--graph", "partitioned", "--replication", "2").replication == 2
    assert options("--sampler", "ladies", "--layer-sizes", "32,16").sizes == (32, 16)
    assert options("--fanouts", "5,5", "--hidden", "8").hidden == 8
    assert options("--no-progress").progress is False
    assert options("--progress").progress is True
    assert options("--memory-budget", "512M").memory_budget == 512 << 20
    opts = options("--graph", "partitioned", "--feature-cache", "0.1", "--cache-policy",
                   "frequency")
    assert (opts.feature_cache, opts.cache_policy) == (0.1, "frequency")
    assert options("--graph", "partitioned", "--feature-cache", "1").feature_cache == 1.0
    assert options("--features", "columns").features == "columns"
    opts = options("--graph", "partitioned", "--partition", "hash", "--features", "columns")
    assert (opts.partition, opts.features) == ("hash", "columns")
    assert options("--mode", "bns", "--partition", "hash").partition == "hash"


@pytest.mark.parametrize("kwargs, message", [
    (dict(feature_cache=0.1), "--feature-cache applies to --graph partitioned"),
    (dict(graph="partitioned", feature_cache=1.5), "--feature-cache must be a fraction of "
                                                   "the vertices in [0, 1]; got 1.5"),
    (dict(graph="partitioned", feature_cache=float("nan")), "in [0, 1]; got nan"),
    (dict(graph="partitioned", feature_cache="0.1"), "in [0, 1]; got '0.1'"),
    (dict(graph="partitioned", feature_cache=0.1, cache_policy="lru"),
     "unknown cache policy 'lru'; use degree or frequency"),
])
def test_cache_options_are_checked_in_trainoptions_too(kwargs, message):
    from sampling.loading.features import CACHE_POLICIES
    from sampling.train.options import CACHE_POLICIES as OPTION_POLICIES, UsageError
    from sampling.train.options import check_options
    assert OPTION_POLICIES == CACHE_POLICIES
    with pytest.raises(UsageError) as info:
        check_options(TrainOptions(**kwargs))
    assert message in str(info.value)


def test_table_has_a_cache_column_only_with_a_cache():
    from sampling.train.report import format_row, header
    from sampling.train.trainer import EpochStats
    times = dict.fromkeys(["sample", "fetch", "fwd/bwd", "allreduce", "eval"], 0.5)
    s = EpochStats(3, 1.25, 0.5, times, 1000, 2_000_000, 10, cache_hits=31, cache_requests=50)
    assert "cache hit" not in header() and "cache hit" in header(cache=True)
    assert len(header(cache=True)) == len(format_row(s, cache=True))
    assert format_row(s, cache=True).endswith("62.0 %")
    assert format_row(s) == format_row(s, cache=True)[:len(format_row(s))]
    assert format_row(EpochStats(1, 1.0, 0.5, times), cache=True).endswith(" -")


def test_root_is_passed_to_the_loader(monkeypatch, tmp_path, capsys):
    import sampling.datasets
    cora = sampling.datasets.load("cora")
    calls = []

    def fake_load(name, **kwargs):
        calls.append((name, kwargs))
        return cora

    monkeypatch.setattr(sampling.datasets, "load", fake_load)
    rc, out, err = run_main(["--dataset", "ogbn-arxiv", "--root", str(tmp_path)] + QUICK,
                            capsys)
    assert rc == 0, err
    assert calls == [("ogbn-arxiv", {"root": str(tmp_path)})]
    rc, out, err = run_main(QUICK, capsys)
    assert rc == 0 and calls[-1] == ("cora", {}), err


def test_dataset_given_by_path_trains(npz, capsys):
    rc, out, err = run_main(["--dataset", npz, "--fanouts", "5,5"] + QUICK, capsys)
    assert rc == 0, err
    assert LAST_LINE.match(out.strip().splitlines()[-1]), out
    assert "mycora" in out


def test_fanout_minus_one_trains(capsys):
    rc, out, err = run_main(["--fanouts", "-1,5"] + QUICK, capsys)
    assert rc == 0, err
    assert "fanouts -1,5" in out
    assert LAST_LINE.match(out.strip().splitlines()[-1]), out


# -- --help ------------------------------------------------------------------------------------

def test_help_reads_cleanly(capsys):
    rc, out, err = run_main(["--help"], capsys)
    assert rc == 0 and err == ""
    assert out.startswith("usage: python -m sampling.train")
    assert "(default: None)" not in out and "default: None" not in out
    parser = build_parser()
    defaults = TrainOptions()
    shown = {}
    for action in parser._actions:
        if action.dest == "help":
            continue
        flag = action.option_strings[0]
        assert action.help and action.help.strip(), f"{flag} has no help string"
        assert action.help.count("default:") <= 1, (flag, action.help)
        assert flag in out
        m = re.search(r"\(default: ([^)]*)\)$", action.help)
        if m:
            shown[action.dest] = m.group(1)
    # The defaults shown are TrainOptions' (the values used when the option is left out).
    want = {
        "dataset": defaults.dataset, "sampler": defaults.sampler,
        "fanouts": ",".join(map(str, defaults.fanouts)),
        "layer_sizes": ",".join(map(str, defaults.layer_sizes)),
        "batch_size": str(defaults.batch_size), "memory_budget": "1G",
        "graph": defaults.graph, "replication": str(defaults.replication),
        "device": defaults.device, "epochs": f"{defaults.epochs}; 200 with --mode bns",
        "lr": str(defaults.lr),
        "weight_decay": str(defaults.weight_decay), "hidden": str(defaults.hidden),
        "dropout": str(defaults.dropout), "seed": str(defaults.seed),
    }
    assert {k: shown.get(k) for k in want} == want
    assert defaults.memory_budget == 1 << 30
    # Options whose default is not a TrainOptions value say what happens instead.
    assert "$SPLA_DATA" in shown["root"]
    assert "--memory-budget" in shown["bulk"]
    assert "NUMBA_NUM_THREADS" in shown["threads"]


# -- the progress bar ----------------------------------------------------------------------------

def test_progress_bar_with_progress(capsys):
    pytest.importorskip("tqdm")
    rc, out, err = run_main(["--progress", "--fanouts", "5,5"] + QUICK, capsys)
    assert rc == 0, err
    # tqdm's bar: "epoch 1:  33%|###    | 1/3 [...]", on stderr only, cleared when closed
    assert re.search(r"epoch 1: +\d+%\|.*\| \d+/3 ", err), err
    assert "minibatch" in err
    assert "\r" not in out and "%|" not in out
    assert LAST_LINE.match(out.strip().splitlines()[-1]), out
    rows = [ln for ln in out.splitlines() if re.match(r"^\s+1\s+\d\.\d{4}\s", ln)]
    assert len(rows) == 1, out  # the epoch's row is intact


def test_no_progress_bar_by_default(capsys):
    # stderr is captured (not a terminal): no bar unless --progress
    rc, out, err = run_main(["--fanouts", "5,5"] + QUICK, capsys)
    assert rc == 0, err
    assert err == "" and "\r" not in out


def test_phase_plot_names_the_cache_hit_rate(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.axes
    from sampling.train.report import plot_phases
    from sampling.train.trainer import EpochStats
    titles = []
    real = matplotlib.axes.Axes.set_title
    monkeypatch.setattr(matplotlib.axes.Axes, "set_title",
                        lambda self, t, **kw: titles.append(t) or real(self, t, **kw))
    times = dict.fromkeys(["sample", "fetch", "fwd/bwd", "allreduce", "eval"], 0.1)
    cached = [EpochStats(e, 1.0, 0.5, times, cache_hits=h, cache_requests=80)
              for e, h in ((1, 20), (2, 40))]
    plot_phases(cached, tmp_path / "a.png", title="run")
    plot_phases([EpochStats(1, 1.0, 0.5, times)], tmp_path / "b.png", title="run")
    assert titles == ["run\nfeature cache hit rate 37.5 %", "run"]
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"


def test_prefetch_option_and_columns(tmp_path, monkeypatch):
    from sampling.train import TrainOptions, build_parser, options_from_args
    from sampling.train.options import UsageError, check_options
    from sampling.train.report import format_row, header
    from sampling.train.trainer import EpochStats
    assert options_from_args(build_parser().parse_args([])).prefetch == 0
    assert options_from_args(build_parser().parse_args(["--prefetch", "3"])).prefetch == 3
    assert "--prefetch K" in build_parser().format_help()
    for bad in (-1, 1.5, True):
        with pytest.raises(UsageError, match="--prefetch must be a number of bulks >= 0"):
            check_options(TrainOptions(prefetch=bad))
    times = dict(zip(["sample", "fetch", "fwd/bwd", "allreduce", "eval"],
                     [0.3, 0.1, 1.0, 0.1, 0.2]))
    s = EpochStats(1, 1.0, 0.5, times, wait=0.1, prefetch=2)
    assert s.overlap == pytest.approx(0.75)
    assert s.total_time == pytest.approx(0.1 + 1.0 + 0.1 + 0.2)
    assert EpochStats(1, 1.0, 0.5, times).total_time == pytest.approx(1.7)
    head, row = header(prefetch=True), format_row(s, prefetch=True)
    assert len(head) == len(row) and "  wait s  overlap  fwd/bwd s" in head
    assert "0.100     75 %" in row
    assert format_row(s) == format_row(EpochStats(1, 1.0, 0.5, times))   # columns off: as before
    pytest.importorskip("matplotlib")
    import matplotlib.axes
    from sampling.train.report import plot_phases
    titles = []
    real = matplotlib.axes.Axes.set_title
    monkeypatch.setattr(matplotlib.axes.Axes, "set_title",
                        lambda self, t, **kw: titles.append(t) or real(self, t, **kw))
    plot_phases([s, EpochStats(2, 1.0, 0.5, times, wait=0.3, prefetch=2)],
                tmp_path / "p.png", title="run")
    assert titles == ["run\nprefetch: 50 % of sample + fetch hidden behind training"]
