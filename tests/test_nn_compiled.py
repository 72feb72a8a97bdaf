"""tang.nn's training step compiled from the tensor IR (tang/nn/compiled.py): the forward as
comprehensions, the backward derived by tang.tensor.grad, and Adam as element-wise
comprehensions, in one graph whose state stays on the device between steps.

Checked against the eager tang.nn path on the same model, start and batches: float64 through
the reference evaluator (to 1e-10), f32 on the CPU device and through wgpu-py on Mesa
lavapipe (to 1e-4 relative to each tensor's scale), and the Quantum Poet's per-epoch
losses on lavapipe (to 1e-4 relative, f32).
"""

from __future__ import annotations

import random

import pytest

import tang.gpu as gpu
import tang.nn as nn
from tang.nn.compiled import training_graph

np = pytest.importorskip("numpy", reason="the eager reference runs on tang.nn's numpy backend")


@pytest.fixture
def native(native_device):
    return native_device


def mlp(backend: str = "numpy") -> nn.Sequential:
    """Every layer the compiled step defines: Linear, Tanh, ReLU, Sigmoid, SiLU."""
    return nn.Sequential(
        nn.Linear(6, 5, seed=1, backend=backend),
        nn.Tanh(),
        nn.Linear(5, 5, seed=2, backend=backend),
        nn.ReLU(),
        nn.Linear(5, 4, seed=3, backend=backend),
        nn.Sigmoid(),
        nn.Linear(4, 4, seed=4, backend=backend),
        nn.SiLU(),
        nn.Linear(4, 3, seed=6, backend=backend),
    )


def batches(loss, sizes=(4, 4, 3), seed: int = 5) -> list:
    """Three batches; the last is short, so the padding path runs."""
    rng = random.Random(seed)
    out = []
    for n in sizes:
        x = nn.tensor([[rng.uniform(-2, 2) for _ in range(6)] for _ in range(n)], backend="numpy")
        if loss is nn.cross_entropy:
            y = [rng.randrange(3) for _ in range(n)]
        else:
            y = nn.tensor(
                [[rng.uniform(-1, 1) for _ in range(3)] for _ in range(n)], backend="numpy"
            )
        out.append((x, y))
    return out


def eager_run(loss, data, lr=0.05, weight_decay=0.0):
    model = mlp()
    opt = nn.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses = []
    for x, y in data:
        value = loss(model(x), y)
        opt.zero_grad()
        value.backward()
        opt.step()
        losses.append(value.item())
    return model, opt, losses


def close_f32(got, want) -> bool:
    """|got − want| ≤ 1e-4·|want| + 1e-5·max(1, max |want|) (the tensor's scale)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(want))))
    return bool(np.all(np.abs(got - want) <= 1e-4 * np.abs(want) + 1e-5 * scale))


@pytest.mark.parametrize("fused", [False, True], ids=["as-derived", "fused"])
@pytest.mark.parametrize("loss", [nn.cross_entropy, nn.mse], ids=["cross_entropy", "mse"])
def test_compiled_step_equals_the_eager_step_in_float64(loss, fused) -> None:
    data = batches(loss)
    eager, _, eager_losses = eager_run(loss, data, weight_decay=0.01)
    model = mlp()
    opt = nn.Adam(model.parameters(), lr=0.05, weight_decay=0.01)
    trainer = nn.compile_training(model, opt, loss, device="reference", fused=fused)
    got = [trainer.step(b) for b in data]
    assert got == pytest.approx(eager_losses, rel=1e-12, abs=1e-12)
    state = trainer.state_dict()
    for name, want in eager.state_dict().items():
        np.testing.assert_allclose(np.array(state[name]), want.numpy(), rtol=1e-10, atol=1e-10)
    # the eager model is untouched until asked
    assert not np.allclose(
        model.state_dict()["0.weight"].numpy(), eager.state_dict()["0.weight"].numpy()
    )


def test_sync_hands_parameters_and_adam_state_back_for_an_exact_eager_resume() -> None:
    data = batches(nn.cross_entropy, sizes=(4, 4, 4))
    eager, _, _ = eager_run(nn.cross_entropy, data)
    model = mlp()
    opt = nn.Adam(model.parameters(), lr=0.05)
    trainer = nn.compile_training(model, opt, nn.cross_entropy, device="reference")
    for b in data[:2]:
        trainer.step(b)
    trainer.sync()  # parameters, moments and step count into the eager model and optimizer
    x, y = data[2]
    value = nn.cross_entropy(model(x), y)
    opt.zero_grad()
    value.backward()
    opt.step()
    for name, want in eager.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[name].numpy(), want.numpy(), rtol=1e-10)


@pytest.mark.parametrize("fused", [False, True], ids=["as-derived", "fused"])
@pytest.mark.parametrize("kind", ["cpu", pytest.param("native", marks=pytest.mark.toolchain)])
def test_compiled_step_on_a_device_equals_the_eager_step_in_f32(kind, fused, request) -> None:
    device = gpu.CPUDevice() if kind == "cpu" else request.getfixturevalue("native")
    data = batches(nn.cross_entropy)
    eager, opt, eager_losses = eager_run(nn.cross_entropy, data)
    model = mlp()
    adam = nn.Adam(model.parameters(), lr=0.05)
    trainer = nn.compile_training(model, adam, nn.cross_entropy, device=device, fused=fused)
    got = [trainer.step(b) for b in data]
    assert close_f32(got, eager_losses), (got, eager_losses)
    state = trainer.state_dict()
    for name, want in eager.state_dict().items():
        assert close_f32(state[name], want.numpy()), name
    for i, (name, _) in enumerate(model.named_parameters()):
        key = "m_" + name.replace(".", "_")
        assert close_f32(trainer.read(key), opt.state[i]["exp_avg"].reshape(-1)), key


def small_loader() -> nn.DataLoader:
    rng = random.Random(9)
    data = [([rng.uniform(-2, 2) for _ in range(6)], rng.randrange(3)) for _ in range(10)]
    return nn.DataLoader(data, batch_size=4, seed=2, backend="numpy")  # batches 4, 4, 2


def test_chunks_resume_exactly_and_fit_matches_the_eager_trainer() -> None:
    eager = mlp()
    want = nn.Trainer(eager, nn.Adam(eager.parameters(), lr=0.05), nn.cross_entropy)
    want_losses = want.epochs(3).fit(small_loader())
    model = mlp()
    adam = nn.Adam(model.parameters(), lr=0.05)
    trainer = nn.Trainer(model, adam, nn.cross_entropy, compiled="reference").epochs(3)
    loader = small_loader()
    got = []
    for chunk in (2, 2, 2, 2, 1):  # 3 epochs of 3 batches; chunks cross the epochs' ends
        steps = trainer.run(loader, chunk)
        assert [s.loss is None for s in steps] == [True] * (len(steps) - 1) + [False]
        got += [s.epoch_loss for s in steps if s.epoch_loss is not None]
    assert trainer.losses == got
    assert got == pytest.approx(want_losses, rel=1e-12)
    for name, value in eager.state_dict().items():
        np.testing.assert_allclose(trainer.compiled.state_dict()[name], value.numpy(), rtol=1e-10)


@pytest.mark.toolchain
def test_the_awaitable_spelling_runs_the_same_kernels(native) -> None:
    """What the page's worker calls (WebGPU reads and compiles are awaited there)."""
    import asyncio

    runs = []
    for spelling in ("sync", "async"):
        model = mlp()
        adam = nn.Adam(model.parameters(), lr=0.05)
        trainer = nn.Trainer(model, adam, nn.cross_entropy, compiled=native).epochs(2)
        if spelling == "sync":
            losses = trainer.fit(small_loader())
            trainer.sync()
        else:
            losses = asyncio.run(trainer.fit_async(small_loader()))
            step = trainer.compiled
            assert asyncio.run(step.state_dict_async()) == step.state_dict()
            asyncio.run(trainer.sync_async())
        runs.append((losses, {k: v.numpy() for k, v in model.state_dict().items()}))
    (sync_losses, sync_state), (async_losses, async_state) = runs
    assert async_losses == sync_losses
    for name in sync_state:
        np.testing.assert_array_equal(async_state[name], sync_state[name])


@pytest.mark.toolchain
def test_only_the_batch_travels_per_step(native) -> None:
    """The parameters and Adam moments stay in device buffers: after the first step no
    buffer is created, only the batch (with its row count) and the two Adam scalars are
    written, and nothing is read unless the loss is asked for."""
    model = mlp()
    trainer = nn.compile_training(
        model, nn.Adam(model.parameters(), lr=0.05), nn.cross_entropy, device=native
    )
    data = batches(nn.cross_entropy, sizes=(4, 4, 4))
    trainer.step(data[0])
    compiled = trainer._run.compiled
    created = len(compiled.allocations)
    names = {id(buf): name for name, buf in compiled.buffers.items()}
    written: list[str] = []
    real_write = native.write

    def record(buf, values):
        written.append(names.get(id(buf), "?"))
        return real_write(buf, values)

    read: list[str] = []
    real_read = native.read

    def record_read(buf):
        read.append(names.get(id(buf), "?"))
        return real_read(buf)

    native.write, native.read = record, record_read
    try:
        trainer.step(data[1])
        names = {id(buf): name for name, buf in compiled.buffers.items()}  # after the swap
        written.clear()
        read.clear()
        trainer.step(data[2], read=False)  # fit's way: the loss is summed on the device
    finally:
        del native.write, native.read
    assert sorted(written) == ["inv_root2", "rows", "step_size", "weight", "x", "y"]
    assert read == []
    assert len(compiled.allocations) == created


def test_the_graph_is_forward_derived_backward_and_adam() -> None:
    model = mlp()
    graph = training_graph(
        model, nn.Adam(model.parameters()), nn.cross_entropy, (4, 6), (4,), fused=False
    )
    text = str(graph)
    assert graph.outputs[0] == "loss"
    params = [n.replace(".", "_") for n, _ in model.named_parameters()]
    state = {f"next_{k}_{p}" for p in params for k in "pmv"}
    assert set(graph.outputs[1:]) == state | {"next_loss_total"}
    for p in params:
        assert f"d_p_{p}[" in text  # the derived gradient of each parameter
        assert f"m_{p}" in graph.inputs and f"v_{p}" in graph.inputs
    assert "sqrt(" in text  # Adam's denominator, element-wise


def test_clear_errors() -> None:
    model = nn.Sequential(nn.Linear(3, 2, seed=0))
    with pytest.raises(TypeError, match="Adam"):
        nn.compile_training(model, nn.SGD(model.parameters()), nn.cross_entropy, "reference")

    class Odd(nn.Module):
        def forward(self, x):
            return x

    odd = nn.Sequential(nn.Linear(3, 2, seed=0), Odd())
    trainer = nn.compile_training(odd, nn.Adam(odd.parameters()), nn.cross_entropy, "reference")
    x = nn.tensor([[0.0, 1.0, 2.0]] * 2)
    with pytest.raises(TypeError, match="no comprehension definition for Odd"):
        trainer.step((x, [0, 1]))
    trainer = nn.compile_training(model, nn.Adam(model.parameters()), nn.cross_entropy, "reference")
    trainer.step((x, [0, 1]))
    with pytest.raises(ValueError, match="compiled for 2"):
        trainer.step((nn.tensor([[0.0, 1.0, 2.0]] * 3), [0, 1, 1]))
    with pytest.raises(ValueError, match=r"target 2\.5 in row 1"):
        trainer.step((x, [0, 2.5]))
    with pytest.raises(ValueError, match="target 7 in row 0"):
        trainer.step((x, [7, 0]))
    with pytest.raises(ValueError, match="unknown device 'gpu'; choose one of native"):
        nn.compile_training(model, nn.Adam(model.parameters()), nn.cross_entropy, "gpu")
    with pytest.raises(ValueError, match="batch_size must be a positive"):
        nn.compile_training(model, nn.Adam(model.parameters()), nn.cross_entropy, batch_size=0)
    other = nn.Sequential(nn.Linear(3, 2, seed=0))
    with pytest.raises(ValueError, match="not the model's"):
        nn.compile_training(model, nn.Adam(other.parameters()), nn.cross_entropy)


@pytest.mark.toolchain
def test_poet_five_epochs_compiled_on_lavapipe_give_the_eager_losses(native) -> None:
    """The issue's check, f32 against the eager float64 path (numpy backend; the pure-Python
    backend gives the same losses, tests/test_nn_train.py). About 10 s cold on lavapipe."""
    from demos import quantum_poet as poet

    epochs = 5
    eager, _ = poet.build_and_train(epochs, "numpy")
    fresh, loader = poet.build_and_train(0, "numpy")
    seen: list[tuple[int, float]] = []
    trainer = nn.Trainer(
        fresh.model,
        fresh.optimizer,
        nn.cross_entropy,
        on_epoch=lambda e, loss: seen.append((e, loss)),
        compiled=native,
    )
    got = trainer.epochs(epochs).fit(loader)
    assert seen == list(enumerate(got))
    want = eager.losses
    assert len(got) == len(want) == epochs
    rel = [abs(a - b) / abs(b) for a, b in zip(got, want)]
    assert max(rel) <= 1e-4, (got, want, rel)
    assert got[-1] < got[0]  # it learns


@pytest.mark.toolchain
def test_poet_command_line_trains_on_the_gpu_like_the_eager_path(native, capsys) -> None:
    """``python -m demos.quantum_poet --device gpu`` gives the eager losses and, with the
    weights handed back, writes the same seeded text."""
    import json

    from demos import quantum_poet as poet

    args = ["--epochs", "2", "--backend", "numpy", "--length", "40", "--json"]
    assert poet.main(args) == 0
    eager = json.loads(capsys.readouterr().out)
    assert poet.main([*args, "--device", "gpu"]) == 0
    compiled = json.loads(capsys.readouterr().out)
    assert compiled["losses"] == pytest.approx(eager["losses"], rel=1e-4)
    assert compiled["params"] == eager["params"]
    assert compiled["text"] == eager["text"]


def test_one_trainer_switches_between_eager_and_compiled_mid_epoch_exactly() -> None:
    """nn.Trainer is the one loop: eager, compiled (the f64 reference here) and back at any
    step, mid-epoch included; parameters, Adam moments, step count and the running loss
    move with each switch, so the losses are the all-eager run's."""
    eager = mlp()
    want = nn.Trainer(eager, nn.Adam(eager.parameters(), lr=0.05), nn.cross_entropy)
    want_losses = want.epochs(4).fit(small_loader())
    model = mlp()
    trainer = nn.Trainer(model, nn.Adam(model.parameters(), lr=0.05), nn.cross_entropy)
    trainer.epochs(4)
    loader = small_loader()
    switches = {2: "reference", 4: None, 5: "reference", 9: None}  # after these many steps
    taken = 0
    while not trainer.done:
        if taken in switches:
            device = switches[taken]
            trainer.compile(device) if device else trainer.eager()
            assert (trainer.compiled is None) == (device is None)
        step = trainer.step(loader)
        assert step.loss is not None  # step() reads its loss unless told not to
        taken += 1
    assert trainer.losses == pytest.approx(want_losses, rel=1e-12)
    for name, value in eager.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[name].numpy(), value.numpy(), rtol=1e-10)


def test_a_compiled_trainer_saves_and_resumes_like_an_eager_one() -> None:
    """state_dict reads the compiled step's state back first; load_state_dict restarts the
    compiled step from the loaded model, optimizer and running loss."""
    model = mlp()
    trainer = nn.Trainer(
        model, nn.Adam(model.parameters(), lr=0.05), nn.cross_entropy, compiled="reference"
    ).epochs(3)
    loader = small_loader()
    trainer.run(loader, 4)  # mid-way through the second epoch
    saved = trainer.state_dict()
    assert saved["position"] == 1 and saved["loss_sum"] > 0
    after = trainer.fit(loader)
    again = mlp()
    resumed = nn.Trainer(
        again, nn.Adam(again.parameters(), lr=0.05), nn.cross_entropy, compiled="reference"
    )
    resumed.load_state_dict(saved)
    assert resumed.fit(loader) == pytest.approx(after, rel=1e-12)
    eager_resume = nn.Trainer(mlp(), nn.Adam(mlp().parameters(), lr=0.05), nn.cross_entropy)
    with pytest.raises(ValueError):  # the optimizer is not the model's: checked as before
        eager_resume.load_state_dict({**saved, "optimizer": {"state": {}}})


def test_a_chunk_stops_once_its_time_is_spent_after_at_least_one_step() -> None:
    model = mlp()
    trainer = nn.Trainer(model, nn.Adam(model.parameters(), lr=0.05), nn.cross_entropy)
    loader = small_loader()
    assert len(trainer.epochs(5).run(loader, 100, seconds=0.0)) == 1
    trainer.compile("reference")
    steps = trainer.run(loader, 100, seconds=0.0)
    assert len(steps) == 1 and steps[0].loss is not None  # the chunk's last loss is read


def test_the_awaitable_trainer_switches_and_chunks_like_the_sync_one() -> None:
    """What the page's worker calls, on the f64 reference device: compile_async (built for
    the loader's next batch), run_async in chunks, sync_async, eager_async."""
    import asyncio

    eager = mlp()
    want = nn.Trainer(eager, nn.Adam(eager.parameters(), lr=0.05), nn.cross_entropy)
    want_losses = want.epochs(3).fit(small_loader())
    model = mlp()
    trainer = nn.Trainer(model, nn.Adam(model.parameters(), lr=0.05), nn.cross_entropy).epochs(3)
    loader = small_loader()

    async def train() -> list[list[float | None]]:
        chunks = [[s.loss for s in trainer.run(loader, 2)]]  # eager first, mid-epoch
        await trainer.compile_async("reference", loader)
        assert trainer.compiled is not None and trainer.compiled.built
        while not trainer.done:
            chunks.append([s.loss for s in await trainer.run_async(loader, 3)])
            if len(chunks) == 2:
                await trainer.sync_async()  # the model catches up; training stays compiled
                assert trainer.compiled is not None
        await trainer.eager_async()
        return chunks

    chunks = asyncio.run(train())
    assert trainer.compiled is None
    assert all(c[-1] is not None and all(v is None for v in c[:-1]) for c in chunks[1:])
    assert trainer.losses == pytest.approx(want_losses, rel=1e-12)
    for name, value in eager.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[name].numpy(), value.numpy(), rtol=1e-10)
