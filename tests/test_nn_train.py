"""Training with tang.nn: XOR learned by a 2-8-1 tanh net; state_dict round trips; the
pure-Python and numpy backends give the same losses; Trainer stops and resumes exactly;
DataLoader batches are reproducible; bad state is rejected before anything changes."""

from __future__ import annotations

import math
import random
import re

import pytest

import tang.nn as nn
from tang.nn.optim import MOMENTS
from tang.nn.pybackend import DOTS, PythonBackend

try:
    import numpy  # noqa: F401

    HAVE_NUMPY = True
except ImportError:  # pragma: no cover - the desktop suite installs numpy
    HAVE_NUMPY = False
needs_numpy = pytest.mark.skipif(not HAVE_NUMPY, reason="numpy (the second backend) is absent")

XOR = [([0.0, 0.0], [0.0]), ([0.0, 1.0], [1.0]), ([1.0, 0.0], [1.0]), ([1.0, 1.0], [0.0])]


def xor_net(backend=None, seed: int = 3) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(2, 8, seed=seed, backend=backend),
        nn.Tanh(),
        nn.Linear(8, 1, seed=seed + 1, backend=backend),
    )


@pytest.mark.parametrize("backend", ["python", pytest.param("numpy", marks=needs_numpy)])
def test_xor_2_8_1_tanh_net_learns(backend: str) -> None:
    model = xor_net(backend)
    loader = nn.DataLoader(XOR, batch_size=4, seed=0, backend=backend)
    trainer = nn.Trainer(model, nn.Adam(model.parameters(), lr=0.05), nn.mse)
    losses = trainer.epochs(300).fit(loader)
    assert len(losses) == 300
    assert losses[-1] < 0.05, losses[-1]
    assert losses[-1] < losses[0] / 10
    with nn.no_grad():
        out = model(nn.tensor([x for x, _ in XOR], backend=backend)).flat()
    assert [round(v) for v in out] == [0, 1, 1, 0]


def test_xor_with_sgd_momentum_and_cross_entropy() -> None:
    model = nn.Sequential(nn.Linear(2, 8, seed=5), nn.Tanh(), nn.Linear(8, 2, seed=6))
    data = [(x, int(y[0])) for x, y in XOR]
    loader = nn.DataLoader(
        data,
        batch_size=4,
        seed=1,
        collate=lambda items: (nn.tensor([x for x, _ in items]), [y for _, y in items]),
    )
    opt = nn.SGD(model.parameters(), lr=0.2, momentum=0.9)
    losses = nn.Trainer(model, opt, nn.cross_entropy).epochs(400).fit(loader)
    assert losses[-1] < 0.05, losses[-1]


def test_linear_init_is_seeded_pytorch_uniform_and_shaped_out_in() -> None:
    a, b = nn.Linear(240, 64, seed=7), nn.Linear(240, 64, seed=7)
    assert a.weight.shape == (64, 240) and a.bias.shape == (64,)
    assert a.weight.tolist() == b.weight.tolist()
    bound = 1 / math.sqrt(240)
    values = a.weight.flat() + a.bias.flat()
    assert all(-bound <= v <= bound for v in values)
    assert max(values) > 0.9 * bound and min(values) < -0.9 * bound
    rng = random.Random(7)
    assert a.weight.flat()[:3] == [rng.uniform(-bound, bound) for _ in range(3)]
    assert nn.Linear(240, 64, seed=8).weight.tolist() != a.weight.tolist()
    assert nn.Linear(3, 2, bias=False).bias is None


def test_linear_glorot_init_is_seeded_with_zero_bias_and_shares_a_generator() -> None:
    a = nn.Linear(240, 64, seed=7, init="glorot")
    assert a.weight.tolist() == nn.Linear(240, 64, seed=7, init="glorot").weight.tolist()
    bound = math.sqrt(6 / (240 + 64))
    rng = random.Random(7)
    assert a.weight.flat() == [rng.uniform(-bound, bound) for _ in range(64 * 240)]
    assert a.bias.flat() == [0.0] * 64
    assert max(a.weight.flat()) > 0.9 * bound and min(a.weight.flat()) < -0.9 * bound
    assert nn.Linear(240, 64, seed=7).weight.flat() != a.weight.flat()  # "uniform": ±1/√in
    assert nn.Linear(3, 2, seed=1, init="glorot", bias=False).bias is None
    # one random.Random shared by the layers: each draws its weights after the one before
    shared = random.Random(11)
    first = nn.Linear(4, 3, seed=shared, init="glorot")
    second = nn.Linear(3, 2, seed=shared, init="glorot")
    rng = random.Random(11)
    b1, b2 = math.sqrt(6 / 7), math.sqrt(6 / 5)
    assert first.weight.flat() == [rng.uniform(-b1, b1) for _ in range(12)]
    assert second.weight.flat() == [rng.uniform(-b2, b2) for _ in range(6)]
    with pytest.raises(ValueError, match=re.escape("init must be one of ['uniform', 'glorot']")):
        nn.Linear(3, 2, init="xavier")


@needs_numpy
def test_linear_glorot_init_is_the_same_on_both_backends() -> None:
    py = nn.Linear(240, 64, seed=3, init="glorot", backend="python")
    np_ = nn.Linear(240, 64, seed=3, init="glorot", backend="numpy")
    assert py.weight.flat() == np_.weight.flat() and py.bias.flat() == np_.bias.flat()


def test_module_names_modes_and_state_dict_round_trip() -> None:
    model = nn.Sequential(nn.Linear(4, 3, seed=1), nn.ReLU(), nn.Linear(3, 2, seed=2), nn.Sigmoid())
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert model.num_parameters() == 4 * 3 + 3 + 3 * 2 + 2
    assert model.eval() is model and not model[2].training
    model.train()
    assert all(m.training for _, m in model.named_modules())
    state = model.state_dict()
    other = nn.Sequential(nn.Linear(4, 3, seed=9), nn.ReLU(), nn.Linear(3, 2, seed=9), nn.Sigmoid())
    other.load_state_dict(state)
    for (n1, p1), (n2, p2) in zip(model.named_parameters(), other.named_parameters()):
        assert n1 == n2 and p1.tolist() == p2.tolist()  # exact, bit for bit
    state["0.weight"].data = state["0.weight"].backend.full((3, 4), 9.0)
    assert model[0].weight.flat()[0] != 9.0, "state_dict hands out copies"
    x = nn.tensor([[0.5, -1.0, 2.0, 0.25]])
    assert model(x).tolist() == other(x).tolist()
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


@needs_numpy
def test_state_dict_moves_between_backends() -> None:
    py = nn.Sequential(nn.Linear(3, 2, seed=1, backend="python"))
    np_model = nn.Sequential(nn.Linear(3, 2, seed=2, backend="numpy"))
    np_model.load_state_dict(py.state_dict())
    assert np_model[0].weight.tolist() == py[0].weight.tolist()
    assert np_model[0].weight.backend.name == "numpy"
    py.to("numpy")
    assert py[0].weight.backend.name == "numpy"


def test_load_state_dict_checks_everything_before_assigning() -> None:
    model = nn.Sequential(nn.Linear(3, 2, seed=1), nn.Tanh(), nn.Linear(2, 1, seed=2))
    before = {k: v.tolist() for k, v in model.state_dict().items()}
    good = model.state_dict()
    cases = {
        "missing keys ['2.bias']": {k: v for k, v in good.items() if k != "2.bias"},
        "unexpected keys ['3.weight']": {**good, "3.weight": nn.zeros(1, 1)},
        "'2.weight' has shape (2, 1) but the model's is (1, 2)": {
            **good,
            "2.weight": nn.zeros(2, 1),
        },
        "'0.bias' holds a non-finite number": {**good, "0.bias": [1.0, math.nan]},
        "'0.weight': ragged nested list": {**good, "0.weight": [[1.0, 2.0, 3.0], [1.0]]},
    }
    for message, state in cases.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            model.load_state_dict(state)
        assert {k: v.tolist() for k, v in model.state_dict().items()} == before
    model.load_state_dict({k: v for k, v in good.items() if k != "2.bias"} | {"2.bias": [0.5]})
    assert model[2].bias.tolist() == [0.5]


def poet_like(backend, windows: int = 200, vocab: int = 30, window: int = 8, seed: int = 0):
    """A small model of the Poet's shape on a seeded random text (1-hot windows)."""
    rng = random.Random(seed)
    text = [rng.randrange(vocab) for _ in range(windows + window)]
    data = [(text[i : i + window], text[i + window]) for i in range(windows)]

    def collate(items):
        x = nn.one_hot([w for w, _ in items], vocab, backend=backend)
        return x.reshape(len(items), window * vocab), [t for _, t in items]

    model = nn.Sequential(
        nn.Linear(window * vocab, 32, seed=1, backend=backend),
        nn.Tanh(),
        nn.Linear(32, 32, seed=2, backend=backend),
        nn.Tanh(),
        nn.Linear(32, vocab, seed=3, backend=backend),
    )
    loader = nn.DataLoader(data, batch_size=32, seed=4, collate=collate)
    return model, loader


def poet_losses(backend, epochs: int) -> list[float]:
    model, loader = poet_like(backend)
    trainer = nn.Trainer(model, nn.Adam(model.parameters(), lr=0.005), nn.cross_entropy)
    return trainer.epochs(epochs).fit(loader)


@needs_numpy
def test_python_and_numpy_backends_give_the_same_losses() -> None:
    reference = poet_losses("numpy", 5)
    assert reference[-1] < reference[0]
    for dot in sorted(DOTS):  # every pure-Python dot product this interpreter has
        losses = poet_losses(PythonBackend(dot), 5)
        for epoch, (a, b) in enumerate(zip(losses, reference)):
            assert math.isclose(a, b, rel_tol=1e-9), (dot, epoch, a, b)


def test_trainer_stop_and_resume_match_an_uninterrupted_run() -> None:
    full = poet_losses("python", 3)
    model, loader = poet_like("python")
    stops_at = {3, 9, 10, 17}  # inside an epoch, at its end, at the next start
    seen: list[nn.Step] = []
    trainer = nn.Trainer(model, nn.Adam(model.parameters(), lr=0.005), nn.cross_entropy)

    def on_step(step: nn.Step) -> None:
        seen.append(step)
        if len(seen) in stops_at:
            trainer.stop()

    trainer.on_step = on_step
    trainer.epochs(3)
    runs = 0
    while not trainer.done:
        trainer.fit(loader)
        runs += 1
        assert trainer.stopped or trainer.done
    assert runs == len(stops_at) + 1
    assert trainer.losses == full  # exactly: the same arithmetic in the same order
    assert len(seen) == 3 * len(loader)
    assert [s.epoch_loss for s in seen if s.epoch_loss is not None] == full


def test_trainer_chunks_and_state_dict_resume_in_a_fresh_trainer() -> None:
    full = poet_losses("python", 2)
    model, loader = poet_like("python")
    trainer = nn.Trainer(model, nn.Adam(model.parameters(), lr=0.005), nn.cross_entropy).epochs(2)
    chunk = trainer.run(loader, max_steps=5)
    assert [s.index for s in chunk] == [0, 1, 2, 3, 4]
    trainer.run(loader, max_steps=4)
    saved = trainer.state_dict()
    assert (saved["epoch"], saved["position"]) == (1, 2)  # 7 batches per epoch

    model2, loader2 = poet_like("python")
    fresh = nn.Trainer(model2, nn.Adam(model2.parameters(), lr=0.005), nn.cross_entropy)
    fresh.load_state_dict(saved)
    assert fresh.fit(loader2) == full
    assert trainer.run(loader, 100)[-1].epoch_loss == full[-1]
    assert trainer.run(loader, 100) == []  # done


def test_trainer_callbacks_report_progress() -> None:
    model, loader = poet_like("python", windows=64)
    epochs: list[tuple[int, float]] = []
    trainer = nn.Trainer(
        model,
        nn.SGD(model.parameters(), lr=0.1),
        nn.cross_entropy,
        on_epoch=lambda e, loss: epochs.append((e, loss)),
    )
    losses = trainer.epochs(2).fit(loader)
    assert [e for e, _ in epochs] == [0, 1] and [v for _, v in epochs] == losses
    assert trainer.epochs(4).fit(loader)[:2] == losses and len(trainer.losses) == 4


@pytest.mark.parametrize("backend", ["python", pytest.param("numpy", marks=needs_numpy)])
def test_optimizer_state_dict_round_trip_is_exact(backend: str) -> None:
    # (numpy's Adam updates its moments in place: the saved state must not move with them)
    for make in (
        lambda ps: nn.Adam(ps, lr=0.01, weight_decay=0.001),
        lambda ps: nn.SGD(ps, lr=0.05, momentum=0.9, weight_decay=0.01),
    ):
        model, loader = poet_like(backend, windows=64)
        opt = make(model.parameters())
        trainer = nn.Trainer(model, opt, nn.cross_entropy).epochs(1)
        trainer.fit(loader)
        model_state, opt_state = model.state_dict(), opt.state_dict()
        assert opt_state["param_groups"][0]["params"] == [0, 1, 2, 3, 4, 5]
        after = nn.Trainer(model, opt, nn.cross_entropy).epochs(1).fit(loader)

        model2, _ = poet_like(backend, windows=64)
        opt2 = make(model2.parameters())
        model2.load_state_dict(model_state)
        opt2.load_state_dict(opt_state)
        assert nn.Trainer(model2, opt2, nn.cross_entropy).epochs(1).fit(loader) == after
        with pytest.raises(ValueError, match="different parameter list"):
            make(list(model2.parameters())[:2]).load_state_dict(opt_state)


@pytest.mark.parametrize("backend", ["python", pytest.param("numpy", marks=needs_numpy)])
def test_adam_matches_the_textbook_update(backend: str) -> None:
    p = nn.Parameter([1.0, -2.0], backend=backend)
    opt = nn.Adam([p], lr=0.1)
    grads = [[0.5, -1.0], [0.25, 2.0]]
    m, v, ref = [0.0, 0.0], [0.0, 0.0], [1.0, -2.0]
    for t, g in enumerate(grads, start=1):
        p.grad = nn.tensor(g, backend=backend)
        opt.step()
        for i in range(2):
            m[i] = 0.9 * m[i] + 0.1 * g[i]
            v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i]
            mhat, vhat = m[i] / (1 - 0.9**t), v[i] / (1 - 0.999**t)
            ref[i] -= 0.1 * mhat / (math.sqrt(vhat) + 1e-8)
    for a, b in zip(p.flat(), ref):
        assert math.isclose(a, b, rel_tol=1e-12)
    state = opt.state[0]
    assert state["exp_avg"] is not state["exp_avg_sq"]
    assert p.backend.to_flat(state["exp_avg"]) == pytest.approx(m, rel=1e-12)
    assert p.backend.to_flat(state["exp_avg_sq"]) == pytest.approx(v, rel=1e-12)


def test_dataloader_batches_are_seeded_and_cover_every_sample() -> None:
    data = list(range(10))
    loader = nn.DataLoader(data, batch_size=4, seed=3)
    assert len(loader) == 3
    epoch0 = [b.flat() for b in loader]
    epoch1 = [b.flat() for b in loader]
    assert sorted(v for b in epoch0 for v in b) == [float(i) for i in data]
    assert [len(b) for b in epoch0] == [4, 4, 2]
    assert epoch0 != epoch1, "reshuffled each epoch"
    again = nn.DataLoader(data, batch_size=4, seed=3)
    assert [b.flat() for b in again] == epoch0
    assert again.batch(0, 1).flat() == epoch0[1]
    ordered = nn.DataLoader(data, batch_size=4, shuffle=False, drop_last=True)
    assert [b.flat() for b in ordered] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    pairs = nn.DataLoader([([1.0, 2.0], 0), ([3.0, 4.0], 1)], batch_size=2, shuffle=False)
    x, y = next(iter(pairs))
    assert x.shape == (2, 2) and y.tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="batch_size"):
        nn.DataLoader(data, batch_size=0)
    with pytest.raises(ValueError, match="leaves no batch"):
        nn.DataLoader(data, batch_size=11, drop_last=True)


@needs_numpy
def test_backend_selection() -> None:
    assert nn.available_backends() == ["python", "numpy"]
    assert nn.tensor([1.0]).backend.name == "python"
    with nn.use_backend("numpy"):
        t = nn.tensor([1.0, 2.0])
        assert t.backend.name == "numpy" and nn.Linear(2, 1).weight.backend.name == "numpy"
    assert nn.tensor([1.0]).backend.name == "python"
    with pytest.raises(ValueError, match="different backends"):
        t + nn.tensor([1.0, 2.0])
    assert (t.to("python") + nn.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]


def test_a_resume_on_a_different_loader_is_refused() -> None:
    model, loader = poet_like("python")
    trainer = nn.Trainer(model, nn.Adam(model.parameters(), lr=0.005), nn.cross_entropy)
    trainer.epochs(1).run(loader, 2)
    saved = trainer.state_dict()
    assert saved["batches"]["seed"] == 4 and saved["batches"]["batch_size"] == 32
    other = nn.DataLoader(loader.dataset, batch_size=32, seed=5, collate=loader.collate)
    with pytest.raises(ValueError, match="another loader"):
        trainer.run(other, 1)
    model2, _ = poet_like("python")
    fresh = nn.Trainer(model2, nn.Adam(model2.parameters(), lr=0.005), nn.cross_entropy)
    fresh.load_state_dict(saved)
    with pytest.raises(ValueError, match="another loader"):
        fresh.fit(other)
    assert len(fresh.fit(loader)) == 1


def test_load_state_dict_non_strict_allows_missing_and_extra_keys() -> None:
    model = nn.Sequential(nn.Linear(2, 2, seed=1), nn.Tanh(), nn.Linear(2, 1, seed=2))
    model.load_state_dict({"0.bias": [1.0, 2.0], "9.weight": [0.0]}, strict=False)
    assert model[0].bias.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="has shape"):
        model.load_state_dict({"0.bias": [1.0]}, strict=False)


def _adam_run(backend: str, weight_decay: float) -> tuple[list[float], list[float], list[float]]:
    rng = random.Random(7)
    p = nn.Parameter([[rng.uniform(-1, 1) for _ in range(5)] for _ in range(3)], backend=backend)
    opt = nn.Adam([p], lr=0.05, weight_decay=weight_decay)
    for _ in range(3):
        p.grad = nn.tensor(
            [[rng.uniform(-2, 2) for _ in range(5)] for _ in range(3)], backend=backend
        )
        opt.step()
    s = opt.state[0]
    return p.flat(), p.backend.to_flat(s["exp_avg"]), p.backend.to_flat(s["exp_avg_sq"])


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_adam_is_written_once_and_every_executor_runs_the_same_bits(weight_decay: float) -> None:
    """Adam's update is AdamRule, element by element: the Python and numpy backends run it
    through ``map`` and the compiled step as comprehensions; all give the same bits."""
    import tang.tensor as ir
    from tang.nn import npbackend, pybackend
    from tang.nn.compiled import adam_update

    for backend in (pybackend.PythonBackend, npbackend.NumpyBackend):
        assert not {"adam_update", "sgd_update"} & set(vars(backend))  # no second Adam
    want = _adam_run("python", weight_decay)
    if HAVE_NUMPY:
        assert _adam_run("numpy", weight_decay) == want
    # the compiled step's update graph, run by the tensor IR's own evaluator
    rng = random.Random(7)
    p = [[rng.uniform(-1, 1) for _ in range(5)] for _ in range(3)]
    opt = nn.Adam([nn.Parameter(p)], lr=0.05, weight_decay=weight_decay)
    graph = ir.graph(**adam_update({"p_w": (3, 5)}, {"p_w": "d_w"}, opt))
    m = v = [[0.0] * 5 for _ in range(3)]
    for t in range(1, 4):
        g = [[rng.uniform(-2, 2) for _ in range(5)] for _ in range(3)]
        step_size, inv_root2 = opt.rule().numbers(opt.lr, t)
        values = {"p_w": p, "d_w": g, "m_w": m, "v_w": v, "step_size": [step_size]}
        out = ir.evaluate(graph, {**values, "inv_root2": [inv_root2]}, backend="python")
        p, m, v = out["next_p_w"], out["next_m_w"], out["next_v_w"]
    assert ([x for row in p for x in row], [x for row in m for x in row]) == want[:2]
    assert [x for row in v for x in row] == want[2]


@needs_numpy
def test_numpy_adam_runs_all_parameters_as_one_map_and_follows_a_replaced_parameter() -> None:
    """On numpy one map updates every parameter (joined end to end): the same bits as the
    Python backend's map per parameter, parameters and moments left as views of the joined
    arrays; a parameter or moment put in place between steps is read, not the old view."""
    rng = random.Random(11)
    shapes = [(3, 4), (4,), (2, 2)]
    start = [[rng.uniform(-1, 1) for _ in range(math.prod(s))] for s in shapes]
    grads = [[[rng.uniform(-1, 1) for _ in range(math.prod(s))] for s in shapes] for _ in range(4)]
    runs = {}
    for backend in ("python", "numpy"):
        params = [nn.Parameter(nn.tensor(f, backend=backend).reshape(*s).tolist(), backend=backend)
                  for f, s in zip(start, shapes)]  # fmt: skip
        opt = nn.Adam(params, lr=0.1)
        for k, step in enumerate(grads):
            if k == 2:  # between steps: a new value for one parameter and one moment
                params[1].data = params[1].backend.from_flat([0.5, -0.5, 0.25, 0.0], (4,))
                opt.state[2]["exp_avg"] = params[2].backend.full((2, 2), 0.125)
            for p, g, s in zip(params, step, shapes):
                p.grad = nn.tensor(g, backend=backend).reshape(*s)
            opt.step()
        runs[backend] = [p.flat() for p in params] + [
            p.backend.to_flat(st[k]) for st, p in zip(opt.state, params) for k in MOMENTS
        ]
        if backend == "numpy":
            joined = params[0].data.base
            assert joined is not None and all(p.data.base is joined for p in params)
    assert runs["numpy"] == runs["python"]


@pytest.mark.parametrize("backend", ["python", pytest.param("numpy", marks=needs_numpy)])
def test_sgd_rule_with_momentum_and_decay_matches_the_textbook_update(backend: str) -> None:
    p = nn.Parameter([1.0, -2.0, 0.5], backend=backend)
    opt = nn.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    ref, buf = [1.0, -2.0, 0.5], None
    for g in ([0.5, -1.0, 0.0], [0.25, 2.0, -3.0]):
        p.grad = nn.tensor(g, backend=backend)
        opt.step()
        d = [gi + 0.01 * pi for gi, pi in zip(g, ref)]
        buf = d if buf is None else [0.9 * b + di for b, di in zip(buf, d)]
        ref = [pi - 0.1 * b for pi, b in zip(ref, buf)]
    assert p.flat() == ref
    assert p.backend.to_flat(opt.state[0]["momentum_buffer"]) == buf


@needs_numpy
def test_numpy_sums_add_in_index_order_like_the_python_backend() -> None:
    """The numpy backend's sums fold each axis left to right (an outer axis by numpy's own
    reduce, which adds whole rows in order): the bits of the Python backend's sums."""
    rng = random.Random(3)
    for shape, dims in [((32, 64), (0,)), ((5, 7, 9), (1,)), ((5, 7, 9), (0, 2)), ((9, 40), (1,))]:
        flat = [rng.uniform(-1, 1) * 10.0 ** rng.randint(-6, 6) for _ in range(math.prod(shape))]
        sums = [
            nn.tensor(flat, backend=b).reshape(*shape).sum(dim=dims).flat()
            for b in ("python", "numpy")
        ]
        assert sums[0] == sums[1], (shape, dims)
