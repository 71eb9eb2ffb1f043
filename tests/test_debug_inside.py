"""Seeing inside a program: fnad.draw, fnad.profiler, the "fnad" logger, traceback
filtering and config.debug_nans, on the W2 MLP training step."""
import gzip
import inspect
import json
import logging
import shutil
import subprocess
import sys
import threading
import time
import traceback

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import config, events
from fnad.backends.fusion import Group, partition
from fnad.backends.cpu.lowering import wait_for_compiles
from fnad.errors import NaNError, ShapeError
from fnad.kernels import threads
from fnad.staged import jit as jit_module

SIZES = [784, 1024, 1024, 10]     # bench/jit.py's W2 MLP
BATCH = 256


def loss(params, x, labels):
    for W, b in params[:-1]:
        x = fnad.nn.relu(x @ W + b)
    W, b = params[-1]
    logp = fnad.nn.log_softmax(x @ W + b)
    return -fnp.mean(fnp.take_along_axis(logp, labels[:, None], axis=1))


def sgd_step(params, x, labels):
    grads = fnad.grad(loss)(params, x, labels)
    return [(W - 0.01 * gW, b - 0.01 * gb) for (W, b), (gW, gb) in zip(params, grads)]


@pytest.fixture(scope="module")
def mlp():
    rng = np.random.default_rng(0)
    params = [(fnp.asarray(rng.standard_normal((m, n)) * 0.05, np.float32),
               fnp.zeros(n, np.float32)) for m, n in zip(SIZES, SIZES[1:])]
    x = fnp.asarray(rng.standard_normal((BATCH, SIZES[0])), np.float32)
    labels = fnp.asarray(rng.integers(0, 10, BATCH))
    return params, x, labels


# --------------------------------------------------------------------------- draw

def _expected_counts(args):
    program = fnad.make_jaxpr(sgd_step)(*args).program
    return len(program.eqns), sum(isinstance(s, Group) for s in partition(program))


def test_draw_without_graphviz_gives_dot_with_a_hint(mlp, monkeypatch, tmp_path):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    picture = fnad.draw(sgd_step)(*mlp)
    equations, groups = _expected_counts(mlp)
    assert picture.format == "dot" and picture.splitlines()[0].startswith("// fnad.draw:")
    assert "dot" in picture.splitlines()[0] and picture._repr_svg_() is None
    picture.save(tmp_path / "step.dot")
    assert (tmp_path / "step.dot").read_text() == picture.dot
    with pytest.raises(RuntimeError, match="Graphviz"):
        picture.save(tmp_path / "step.svg")
    nodes = [ln for ln in picture.dot.splitlines() if ln.strip().startswith("e")
             and "[label=" in ln and "->" not in ln]
    assert len(nodes) == equations == picture.equations
    assert picture.dot.count("subgraph cluster_fused") == groups == picture.fused_groups > 3
    assert 'label="float32[256,1024]"' in picture.dot    # edges carry shape and dtype
    # a box holds its fused equations only: no edge inside it (Graphviz would pull the
    # edge's other end, a library call, into the box), and no library call
    lines = picture.dot.splitlines()
    for start in [i for i, ln in enumerate(lines) if "subgraph cluster_fused" in ln]:
        end = next(i for i in range(start, len(lines)) if lines[i].strip() == "}")
        box = lines[start + 1:end]
        assert not any("->" in ln for ln in box)
        assert not any("dot_general" in ln or "scatter" in ln for ln in box)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_draw_renders_svg(mlp, tmp_path):
    picture = fnad.draw(sgd_step)(*mlp)
    equations, groups = _expected_counts(mlp)
    assert picture.format == "svg" and picture.lstrip().startswith(("<?xml", "<svg", "<!"))
    titles = [t for t in picture.split("<title>")[1:]]
    assert sum(t.split("<")[0].startswith("e") and t.split("<")[0][1:].isdigit()
               for t in titles) == equations
    assert sum(t.startswith("cluster_fused") for t in titles) == groups
    assert picture._repr_svg_() == str(picture)
    picture.save(tmp_path / "step.svg")
    assert (tmp_path / "step.svg").read_text().count("cluster_fused") == groups


def test_draw_puts_control_flow_bodies_in_clusters():
    picture = fnad.draw(lambda xs: fnad.lax.scan(lambda c, x: (c + x, c * x), 0.0, xs))(
        fnp.arange(3.0))
    assert "subgraph cluster_body" in picture.dot and 'label="scan body"' in picture.dot
    assert picture.equations == 1


# --------------------------------------------------------------------------- profiler

def test_profile_of_a_training_step(mlp, tmp_path, capsys):
    step = fnad.jit(sgd_step)
    step(*mlp)
    wait_for_compiles()
    step(*mlp)
    measured = []
    with fnad.profiler.trace(tmp_path):
        for _ in range(4):
            start = time.perf_counter()
            step(*mlp)
            measured.append(time.perf_counter() - start)
    assert events.recording is None
    path = fnad.profiler.last_trace()
    assert path.startswith(str(tmp_path)) and path.endswith(".trace.json.gz")
    with gzip.open(path, "rt") as f:
        trace = json.load(f)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    for e in complete:
        assert {"name", "cat", "ts", "dur", "pid", "tid"} <= set(e)
        assert e["dur"] >= 0 and isinstance(e["ts"], float)
    calls = [e for e in complete if e["cat"] == "jit"]
    kernels = [e for e in complete if e["cat"] == "kernel"]
    assert [c["name"] for c in calls] == ["jit(sgd_step)"] * 4
    coverage = []
    for call, seconds in zip(calls, measured):
        inside = [k["dur"] for k in kernels
                  if call["ts"] <= k["ts"] and k["ts"] + k["dur"] <= call["ts"] + call["dur"]]
        coverage.append(sum(inside) / (seconds * 1e6))
    assert max(coverage) <= 1.0
    assert np.median(coverage) >= 0.9, coverage
    rows = fnad.profiler.summary(top=5)
    out = capsys.readouterr().out
    assert rows[0][0].startswith("dot_general") and "dot_general" in out
    assert sum(r[1] for r in rows) == len(kernels)


def test_no_profiler_no_timed_driver():
    # with no trace active the driver that runs is the plain one: the timed variant is
    # made only when a trace first calls the program
    from fnad.backends.cpu.lowering import compiled
    f = fnad.jit(lambda x: fnp.exp(x) * 2.0)
    f(fnp.ones(3))
    f(fnp.ones(3))
    exe = compiled(f.trace(fnp.ones(3)).program)
    assert exe.profiled_run is None and events.recording is None


def test_profiler_records_staging_compiles_and_callbacks(tmp_path):
    with fnad.profiler.trace(tmp_path):
        f = fnad.jit(lambda x: fnad.debug.callback(lambda v: None, x * 2.0) or fnp.sin(x) + 1)
        with fnad.profiler.StepTraceAnnotation("train", step_num=3):
            fnad.profiler.annotate_function(f, name="annotated")(fnp.ones(7))
        with pytest.raises(RuntimeError, match="already"):
            fnad.profiler.start_trace(tmp_path)
    names = {(e[1], e[0].split(" ")[0]) for e in fnad.profiler._state["events"]}
    assert {("staging", "trace"), ("compile", "lower"), ("callback", "callback"),
            ("jit", "jit(<lambda>)"), ("step", "train"), ("annotation", "annotated")} <= names
    with pytest.raises(RuntimeError, match="no trace"):
        fnad.profiler.stop_trace()


def test_profiler_records_background_compiles_on_their_thread(tmp_path):
    # a structure no other test compiles: its kernel is compiled (or loaded from the
    # disk cache) on a background thread while the first call runs unfused
    wait_for_compiles()     # (other tests' compiles: not this trace's)
    with fnad.profiler.trace(tmp_path):
        f = fnad.jit(lambda x: fnp.cosh(x) * fnp.arctan(x) - fnp.expm1(x) / 3.0)
        f(fnp.ones((5, 3)))
        wait_for_compiles()
    main = threading.get_ident()
    recorded = fnad.profiler._state["events"]
    assert any(e[1] == "compile" and e[4] != main for e in recorded), recorded
    with gzip.open(fnad.profiler.last_trace(), "rt") as file:
        trace = json.load(file)
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["name"] == "thread_name"}
    compiles = [e for e in trace["traceEvents"] if e.get("cat") == "compile"
                and e["name"].startswith("compile ")]
    # the thread has ended when the trace is written: its name was kept all the same
    assert compiles and all(names[e["tid"]].startswith("fnad compile") for e in compiles)


# --------------------------------------------------------------------------- logging

def test_log_compiles_and_slow_first_calls_go_through_the_fnad_logger(caplog, monkeypatch):
    caplog.set_level(logging.WARNING, logger="fnad")
    monkeypatch.setattr(jit_module, "SLOW_FIRST_CALL_SECONDS", 0.0)

    def slowly_traced(x):
        return x * 3.0
    fnad.jit(slowly_traced)(fnp.ones(3))
    assert any("first call of jit(slowly_traced)" in r.getMessage() for r in caplog.records)
    assert all(r.name == "fnad" for r in caplog.records)
    caplog.clear()
    monkeypatch.setattr(jit_module, "SLOW_FIRST_CALL_SECONDS", 1e9)
    with fnad.log_compiles():
        fnad.jit(lambda x: x - 1.0)(fnp.ones(5))
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "traced <lambda>" in text and "lowered a program of 1 equations" in text


def test_messages_name_functions_without_a_name(caplog, tmp_path, monkeypatch):
    # functools.partial has no __name__: jit, its profile events and its log lines
    # still work, naming the partial's function
    import functools
    caplog.set_level(logging.WARNING, logger="fnad")
    monkeypatch.setattr(jit_module, "SLOW_FIRST_CALL_SECONDS", 0.0)

    def scaled(a, x):
        return x * a
    with fnad.profiler.trace(tmp_path):
        out = fnad.jit(functools.partial(scaled, 3.0))(fnp.ones(2))
    np.testing.assert_array_equal(out, [3.0, 3.0])
    assert any("jit(partial(scaled))" in r.getMessage() for r in caplog.records)
    assert any(e[0] == "jit(partial(scaled))" for e in fnad.profiler._state["events"])


def test_exit_notice_counts_running_compiles(caplog):
    caplog.set_level(logging.WARNING, logger="fnad")
    wait_for_compiles()
    threads.announce_exit_wait()
    assert not caplog.records
    release = threading.Event()
    worker = threading.Thread(target=release.wait, name="fnad compile test")
    worker.start()
    try:
        threads.announce_exit_wait()
    finally:
        release.set()
        worker.join()
    assert "waiting for background kernel compiles (1 thread)" in caplog.records[0].getMessage()


def test_exit_notice_at_interpreter_exit():
    # the notice comes from threading's exit hook, before the interpreter joins the
    # (non-daemon) compile threads: a real process that exits with one still running
    script = ("import threading, time, fnad\n"
              "threading.Thread(target=time.sleep, args=(0.5,),"
              " name='fnad compile k0').start()\n"
              "print('script done', flush=True)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "script done\n"
    notices = [ln for ln in done.stderr.splitlines() if "waiting for background" in ln]
    assert notices == ["fnad: waiting for background kernel compiles (1 thread) to finish "
                       "before exiting; they fill the kernel cache for the next run"]


# --------------------------------------------------------------------------- tracebacks

def mismatched(x, y):
    return x + y        # the line the filtered traceback must end at


def _frames(err):
    return traceback.extract_tb(err.__traceback__)


def test_traceback_of_a_shape_error_ends_at_the_user_line():
    with pytest.raises(ShapeError) as info:
        fnad.jit(mismatched)(fnp.ones(3), fnp.ones(4))
    frames = _frames(info.value)
    line = inspect.getsourcelines(mismatched)[1] + 1
    assert (frames[-1].name, frames[-1].lineno) == ("mismatched", line)
    fnad_frames = [f for f in frames if "/fnad/" in f.filename]
    assert [f.name for f in fnad_frames] == ["__call__"]     # the jit call itself
    assert "traceback_filtering" in "".join(info.value.__notes__)


@pytest.mark.parametrize("transform", ["grad", "vmap"])
def test_traceback_under_grad_and_vmap_ends_at_the_user_line(transform):
    def f(x):
        return fnp.sum(x + fnp.ones(4))
    with pytest.raises(ShapeError) as info:
        getattr(fnad, transform)(f)(fnp.ones(3) if transform == "grad" else fnp.ones((2, 3)))
    frames = _frames(info.value)
    assert frames[-1].name == "f" and frames[-1].line == "return fnp.sum(x + fnp.ones(4))"
    assert sum("/fnad/" in fr.filename for fr in frames) == 1
    assert info.value.__suppress_context__      # (the kernel's numpy error: fnad's own)


def test_traceback_filtering_opt_out(monkeypatch):
    monkeypatch.setattr(config, "traceback_filtering", "off")
    with pytest.raises(ShapeError) as info:
        fnad.jit(mismatched)(fnp.ones(3), fnp.ones(4))
    frames = _frames(info.value)
    assert sum("/fnad/" in f.filename for f in frames) > 5
    assert frames[-1].name != "mismatched"
    monkeypatch.setenv("FNAD_TRACEBACK_FILTERING", "off")
    assert config._filtering_from_environment() == "off"
    monkeypatch.setenv("FNAD_TRACEBACK_FILTERING", "sideways")
    with pytest.raises(ValueError, match="FNAD_TRACEBACK_FILTERING"):
        config._filtering_from_environment()
    with pytest.raises(ValueError, match="traceback_filtering"):
        config.update("traceback_filtering", "sideways")


# --------------------------------------------------------------------------- debug_nans

def negative_log(x):
    y = x * 2.0
    return fnp.log(0 - x) + y


def test_debug_nans_names_the_primitive_and_the_line(monkeypatch):
    monkeypatch.setattr(config, "debug_nans", True)
    with pytest.raises(NaNError) as info:
        fnad.jit(negative_log)(fnp.asarray(np.array([1.0, 2.0])))
    line = inspect.getsourcelines(negative_log)[1] + 2
    message = str(info.value)
    assert "primitive 'log'" in message and f"{__file__}:{line}" in message
    assert "fnp.log(0 - x)" in message
    assert isinstance(info.value, FloatingPointError)
    assert _frames(info.value)[-1].lineno == line
    # no NaN: nothing raised, the same numbers
    np.testing.assert_allclose(fnad.jit(negative_log)(fnp.asarray(np.array([-1.0]))),
                               np.log(1.0) - 2.0)


def test_debug_nans_off_returns_the_nan():
    out = fnad.jit(negative_log)(fnp.asarray(np.array([1.0])))
    assert np.isnan(np.asarray(out)).all()
    with fnad.debug_nans():
        with pytest.raises(NaNError, match="'log'"):
            fnad.jit(negative_log)(fnp.asarray(np.array([1.0])))
    assert config.debug_nans is False
    config.update("jax_debug_nans", True)
    try:
        with pytest.raises(NaNError, match="'log'"):
            fnad.jit(negative_log)(fnp.asarray(np.array([1.0])))
    finally:
        config.update("jax_debug_nans", False)
