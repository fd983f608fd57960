"""``privspec import``: specs from Opacus, dp-accounting and TF Privacy records, with
their provenance, never unpickling anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import privspec
from privspec.cli.app import main
from privspec.spec.loader import load_spec

ROOT = Path(__file__).resolve().parent.parent
SAID = ["--unit", "one training example", "--neighbouring", "add-or-remove"]


def test_opacus_history_becomes_dpsgd_stages(tmp_path: Path) -> None:
    record = tmp_path / "state.json"
    record.write_text(json.dumps({"history": [[1.1, 0.004, 10000], [0.9, 0.004, 500]],
                                  "mechanism": "prv"}), encoding="utf-8")
    out = tmp_path / "run.privspec.yaml"
    assert main(["import", "opacus", str(record), *SAID, "--sampling", "poisson",
                 "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Imported by privspec from Opacus accountant state state.json "
                           "(SHA-256 ")
    assert "Asserted by the user, not recorded: unit 'one training example'" in text
    spec = load_spec(out)
    assert [stage.mechanism.block.steps for stage in spec.mechanism.block] == [10000, 500]
    report = privspec.evaluate(spec)
    assert report.description is not None and "Opacus accountant state" in report.description


def test_an_exported_event_imports_to_the_same_guarantee(tmp_path: Path) -> None:
    source = ROOT / "examples" / "mixed-pipeline.privspec.yaml"
    event = tmp_path / "event.json"
    assert main(["export", "--dp-event", str(source), "-o", str(event)]) == 0
    out = tmp_path / "again.privspec.yaml"
    assert main(["import", "dp-event", str(event), *SAID, "--sampling", "poisson",
                 "-o", str(out)]) == 0
    assert privspec.evaluate(out).gdp.mu == pytest.approx(privspec.evaluate(source).gdp.mu,
                                                          rel=1e-9)


@pytest.mark.parametrize(("partial", "steps"), [([], 3510), (["--partial-batch", "dropped"], 3510),
                                               (["--partial-batch", "kept"], 3525)])
def test_tf_privacy_inputs(tmp_path: Path, partial: list[str], steps: int) -> None:
    """15 epochs of 234 full batches (235 with the partial one kept): 15 batches per
    example, where ⌈15·60000/256⌉ = 3,516 steps reached into a 16th epoch."""
    out = tmp_path / "tf.privspec.yaml"
    assert main(["import", "tf-privacy", "--examples", "60000", "--batch", "256", "--epochs",
                 "15", "--noise", "1.1", "--unit", "one training example",
                 "--neighbouring", "zero-out", "--sampling", "shuffled", *partial,
                 "-o", str(out)]) == 0
    block = load_spec(out).mechanism.block
    assert block.sampling == "shuffled" and block.partial_batch == (partial or [None, None])[1]
    assert block.times() == steps and block.participations() == 15
    if partial:
        assert f"partial last batch {partial[1]}" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(("content", "says"), [
    (b"\x80\x04\x95", "never unpickles"),
    (b"PK\x03\x04rest", "PyTorch checkpoint"),
    (b"{not json", "not JSON"),
    (b'{"history": []}', "no 'history' list"),
    (b'{"history": [[1.1, 0.004]]}', "history[0] is not"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),  # (was a RecursionError)
])
def test_bad_records_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          content: bytes, says: str) -> None:
    record = tmp_path / "state.pt"
    record.write_bytes(content)
    assert main(["import", "opacus", str(record), *SAID, "--sampling", "poisson"]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


def test_what_a_record_cannot_prove_must_be_stated(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    record = tmp_path / "state.json"
    record.write_text('{"history": [[1.1, 0.004, 100]]}', encoding="utf-8")
    assert main(["import", "opacus", str(record), "--unit", "u",
                 "--neighbouring", "add-or-remove"]) == 2  # no --sampling: not guessed
    assert main(["import", "opacus", str(record), *SAID, "--sampling", "shuffled"]) == 2
    assert "for --sampling poisson only" in capsys.readouterr().err


def test_a_raw_self_composed_event_keeps_its_count(tmp_path: Path) -> None:
    """A SelfComposedDpEvent's own "event" field is its inner event, not the export
    file's wrapper: reading it as the wrapper dropped the count (100 steps became 1)."""
    import dp_accounting

    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1)), 100)
    from privspec.workflows.importing import _plain

    record = tmp_path / "event.json"
    record.write_text(json.dumps(_plain(event)), encoding="utf-8")
    out = tmp_path / "run.privspec.yaml"
    assert main(["import", "dp-event", str(record), *SAID, "--sampling", "poisson",
                 "-o", str(out)]) == 0
    assert load_spec(out).mechanism.block.steps == 100


def test_the_python_api_builds_the_same_specs() -> None:
    import dp_accounting

    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.004, dp_accounting.GaussianDpEvent(1.1)), 10_000)
    said = {"unit": "one training example", "neighbouring": "add-or-remove"}
    from_event = privspec.from_dp_event(event, sampling="poisson", **said)
    from_history = privspec.from_opacus([(1.1, 0.004, 10_000)], sampling="poisson", **said)
    from_state = privspec.from_opacus({"history": [[1.1, 0.004, 10_000]]}, sampling="poisson",
                                      **said)
    assert from_event.mechanism == from_history.mechanism == from_state.mechanism
    assert from_event.description is not None and "given in Python" in from_event.description
    assert privspec.evaluate(from_event).gdp == privspec.evaluate(from_history).gdp
    from privspec.workflows.importing import RecordError

    with pytest.raises(RecordError):
        privspec.from_opacus([(1.1, 0.004, 100)], sampling="shuffled", **said)
    with pytest.raises(TypeError, match="sampling"):  # never guessed: the history lacks it
        privspec.from_opacus([(1.1, 0.004, 100)], **said)  # type: ignore[call-arg]


def _jax(tmp_path: Path, record: dict[str, object], sampling: str = "poisson"
         ) -> tuple[int, Path]:
    path = tmp_path / "dp_params.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    out = tmp_path / "jax.privspec.yaml"
    out.unlink(missing_ok=True)
    code = main(["import", "jax-privacy", str(path), *SAID, "--sampling", sampling,
                 "-o", str(out)])
    return code, out


def test_jax_privacy_gradient_accumulation_makes_the_logical_batch(tmp_path: Path) -> None:
    """8 devices × 64 examples × 8 accumulation steps: each update sees 4,096 examples."""
    code, out = _jax(tmp_path, {"noise_multipliers": 3.0, "num_samples": 50_000,
                                "per_device_batch_size": 64, "num_devices": 8,
                                "gradient_accumulation_steps": 8, "num_updates": 875,
                                "delta": 1e-5})
    assert code == 0
    block = load_spec(out).mechanism.block
    assert (block.batch_size, block.dataset_size, block.steps) == (4096, 50_000, 875)
    # q·N need not be a whole number of anything: the rate is 4,096 / 50,000 exactly
    direct = {"privspec": 1, "title": "t", "unit": "u", "neighbouring": "add-or-remove",
              "mechanism": {"dpsgd": {"noise_multiplier": 3.0, "sampling_rate": 4096 / 50_000,
                                      "steps": 875}}}
    assert privspec.evaluate(out).gdp.mu == pytest.approx(privspec.evaluate(direct).gdp.mu,
                                                          rel=1e-12)
    assert "gradient_accumulation_steps 8" in out.read_text(encoding="utf-8")


def test_jax_privacy_schedules_become_stages(tmp_path: Path) -> None:
    """Noise 1.2 then 0.9 from update 100; the batch doubles from update 150 and doubles
    again from 250 (jax_privacy's scales multiply, as optax's piecewise schedule does)."""
    code, out = _jax(tmp_path, {"noise_multipliers": [[0, 1.2], [100, 0.9]],
                                "num_samples": 10_000, "batch_size": 250,
                                "batch_size_scale_schedule": {"150": 2, "250": 2},
                                "num_updates": 300})
    assert code == 0
    stages = load_spec(out).mechanism.block
    assert [(s.mechanism.block.steps, s.mechanism.block.noise_multiplier,
             s.mechanism.block.batch_size) for s in stages] == [
        (100, 1.2, 250), (50, 0.9, 250), (100, 0.9, 500), (50, 0.9, 1000)]


@pytest.mark.parametrize(("record", "says"), [
    ({"noise_multipliers": 1.0, "num_samples": 100, "batch_size": 10, "num_updates": 5,
      "truncated_batch_size": 12}, "truncated Poisson"),
    ({"noise_multipliers": 1.0, "num_samples": 100, "batch_size": 10, "num_updates": 5,
      "sampling_method": "FIXED_BATCH_SIZE"}, "disagree"),
    ({"noise_multipliers": 1.0, "num_samples": 100, "batch_size": 200, "num_updates": 5},
     "larger than num_samples"),
    ({"noise_multipliers": [[5, 1.0]], "num_samples": 100, "batch_size": 10,
      "num_updates": 5}, "from step 0"),
    ({"noise_multipliers": 1.0, "num_samples": 100, "num_updates": "5"}, "num_updates"),
])
def test_jax_privacy_records_it_cannot_account_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], record: dict[str, object],
        says: str) -> None:
    code, out = _jax(tmp_path, record)
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(("record", "says"), [
    # a missing factor of the logical batch is never taken as 1 (a smaller rate)
    ({"noise_multipliers": 1.0, "num_samples": 1000, "per_device_batch_size": 8,
      "gradient_accumulation_steps": 4, "num_updates": 5}, "num_devices"),
    ({"noise_multipliers": [[0, 2.0], [0, 1.0]], "num_samples": 100, "batch_size": 10,
      "num_updates": 5}, "two values for one step"),
    ({"noise_multipliers": 1.0, "num_samples": 100, "batch_size": 10, "num_updates": 5,
      "truncated_batch_size": 1}, "truncated Poisson"),
    ({"noise_multipliers": 1.0, "num_samples": 100, "batch_size": 10, "num_updates": 5,
      "is_finite_guarantee": False}, "is_finite_guarantee"),
    ({"noise_multipliers": 1.0, "batch_size": 10, "num_updates": 5}, "num_samples"),
])
def test_jax_privacy_records_that_would_be_optimistic_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], record: dict[str, object],
        says: str) -> None:
    code, out = _jax(tmp_path, record)
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_a_truncated_poisson_run_round_trips_through_its_dp_event(tmp_path: Path) -> None:
    """Exported as TruncatedSubsampledGaussianDpEvent (its rate, not a batch size) and read
    back under zero-out: the same guarantee."""
    source = tmp_path / "run.privspec.yaml"
    source.write_text(
        "privspec: 1\ntitle: truncated\nunit: one training example\nneighbouring: zero-out\n"
        "mechanism:\n  dpsgd: {noise_multiplier: 1.0, batch_size: 500, dataset_size: 50000,\n"
        "          steps: 1000, sampling: truncated-poisson, truncated_batch_size: 620}\n",
        encoding="utf-8")
    event = tmp_path / "event.json"
    assert main(["export", "--dp-event", str(source), "-o", str(event)]) == 0
    again = tmp_path / "again.privspec.yaml"
    assert main(["import", "dp-event", str(event), "--unit", "one training example",
                 "--neighbouring", "zero-out", "--sampling", "truncated-poisson",
                 "-o", str(again)]) == 0
    block = load_spec(again).mechanism.block
    assert (block.steps, block.truncated_batch_size, block.dataset_size) == (1000, 620, 50_000)
    assert privspec.evaluate(again).gdp.mu == pytest.approx(privspec.evaluate(source).gdp.mu,
                                                            rel=1e-9)


def test_an_event_nested_deeper_than_a_spec_may_be_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """950 nested SelfComposedDpEvents are valid JSON; the spec they make is refused as a
    file that deep is, or as a record nested too deeply (it was a RecursionError)."""
    event = '{"class_name": "GaussianDpEvent", "noise_multiplier": 1.0}'
    for _ in range(950):
        event = f'{{"class_name": "SelfComposedDpEvent", "count": 1, "event": {event}}}'
    record = tmp_path / "deep.json"
    record.write_text(event, encoding="utf-8")
    assert main(["import", "dp-event", str(record), *SAID, "--sampling", "poisson"]) == 2
    err = capsys.readouterr().err
    assert "nested" in err and len(err.splitlines()) == 1 and "Traceback" not in err


HOSTILE_NAME = ("run\npublished: {epsilon: 0.01, delta: 1.0e-9, source: audited}\n"
                "report: {regret_threshold: 0.9}\n#.json")


def test_a_record_name_cannot_write_yaml(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A newline in the record's file name ended the provenance comment: the lines after
    it were live keys (a 'published' claim and a report threshold nobody made)."""
    history = '{"history": [[1.0, 0.004, 100]]}'
    (tmp_path / HOSTILE_NAME).write_text(history, encoding="utf-8")
    out = tmp_path / "run.privspec.yaml"
    assert main(["import", "opacus", str(tmp_path / HOSTILE_NAME), *SAID, "--sampling",
                 "poisson", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "U+000A" in err and "rename the file" in err and len(err.splitlines()) == 1
    assert not out.exists()
    # the same text as the title and the unit (data, not comments) stays a string
    (tmp_path / "state.json").write_text(history, encoding="utf-8")
    assert main(["import", "opacus", str(tmp_path / "state.json"), "--unit", HOSTILE_NAME,
                 "--neighbouring", "add-or-remove", "--sampling", "poisson",
                 "--title", HOSTILE_NAME, "-o", str(out)]) == 0
    spec = load_spec(out)
    assert spec.title == spec.unit == HOSTILE_NAME and spec.published is None


def test_an_imported_spec_that_would_not_read_back_is_not_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The written text is read back and compared with the data it was written from."""
    from privspec.spec import loader

    dump = loader.dump_spec_data
    monkeypatch.setattr(loader, "dump_spec_data", lambda data: dump(data) + (
        "published: {epsilon: 0.01, delta: 1.0e-9, source: audited}\n"))
    (tmp_path / "state.json").write_text('{"history": [[1.0, 0.004, 100]]}', encoding="utf-8")
    out = tmp_path / "run.privspec.yaml"
    assert main(["import", "opacus", str(tmp_path / "state.json"), *SAID, "--sampling",
                 "poisson", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "does not read back" in err and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("comment", ["ok\x1b[2Jhidden", "\u202eevil"])
def test_spec_to_yaml_refuses_a_comment_it_cannot_write_as_one(comment: str) -> None:
    spec = privspec.spec_from_dpsgd(noise_multiplier=1.0, sampling_rate=0.01, steps=10,
                                    title="t")
    with pytest.raises(ValueError, match="U\\+"):
        privspec.spec_to_yaml(spec, comment=comment)


BIG = "1" + "0" * 5000


@pytest.mark.parametrize(("source", "record", "says"), [
    ("opacus", '{"history": [[1.0, 0.004, 10], [Infinity, 0.1, 3]]}',
     "history[1][0]: Infinity is not a finite number"),
    ("opacus", '{"history": [[NaN, 0.004, 10]]}', "history[0][0]: NaN is not"),
    ("opacus", '{"history": [[1.0, 0.004, ' + BIG + ']]}',
     "history[0][2]: a whole number of 5,001 digits is out of range (at most 30)"),
    ("opacus", '{"history": [[1e400, 0.004, 10]]}', "history[0][0]: 1e400 is beyond"),
    ("opacus", '{"history": [[-1.0, 0.004, 10]]}',
     "history[0][0] (noise multiplier): must be above 0, got -1.0"),
    ("opacus", '{"history": [[1.0, 4, 10]]}', "history[0][1] (sample rate): must be above 0 "
     "and at most 1, got 4"),
    ("opacus", '{"history": [[1.0, 0.004, 1e300]]}', "history[0][2] (steps): must be at "
     "least 1 and at most 10,000,000"),
    ("opacus", '{"history": [[1.0, 0.004, 2.5]]}',
     "history[0][2] (steps): expected a whole number, got 2.5"),
    ("dp-event", '{"event": {"class_name": "GaussianDpEvent", "noise_multiplier": -Infinity}}',
     "event.noise_multiplier: -Infinity is not a finite number"),
    ("dp-event", '{"class_name": "SelfComposedDpEvent", "count": 1e300, "event": '
     '{"class_name": "GaussianDpEvent", "noise_multiplier": 1}}', "event.count: must be at "
     "least 1 and at most 10,000,000"),
    ("dp-event", '{"class_name": "RandomizedResponseDpEvent", "noise_parameter": 0.5, '
     '"num_buckets": -3}', "event.num_buckets: must be at least 2"),
    ("dp-event", '{"class_name": "GaussianDpEvent\\n::error::x", "noise_multiplier": 1}',
     "event: 'GaussianDpEvent\\n::error::x' has no privspec mechanism"),
    ("jax-privacy", '{"noise_multipliers": NaN, "num_samples": 100, "batch_size": 10, '
     '"num_updates": 5}', "noise_multipliers: NaN is not a finite number"),
    ("jax-privacy", '{"noise_multipliers": [[0, 1.0], [2, -2]], "num_samples": 100, '
     '"batch_size": 10, "num_updates": 5}', "noise_multipliers[1][1]: must be above 0"),
    ("jax-privacy", '{"noise_multipliers": 1, "num_samples": 1e300, "batch_size": 10, '
     '"num_updates": 5}', "num_samples: must be at least 1 and at most 1,000,000,000,000"),
    ("jax-privacy", '{"noise_multipliers": 1, "num_samples": 100, "batch_size": 10, '
     '"num_updates": 5, "batch_size_scale_schedule": {"1": 1000000000000, '
     '"2": 1000000000000, "3": 1000000000000}}',
     "from update 1 a batch of 10,000,000,000,000 is larger than num_samples 100"),
])
def test_numbers_of_a_record_are_checked_before_use(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, record: str,
        says: str) -> None:
    """Infinity, NaN, huge or out-of-range numbers: one line naming the place in the
    record, exit 2 (they were tracebacks, or errors located in the spec not yet written)."""
    path = tmp_path / "record.json"
    path.write_text(record, encoding="utf-8")
    assert main(["import", source, str(path), *SAID, "--sampling", "poisson"]) == 2
    err = capsys.readouterr().err
    assert f"record.json: {says}" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(("content", "says"), [
    (json.dumps({"history": [[1.0, 0.004, 10]] * 3_001}),
     "history has 3,001 items; privspec reads lists of at most 3,000"),
    (" " * 10_000_001, "larger than 10,000,000 bytes, the most privspec reads"),
    (json.dumps({"history": [[1.0, 0.004, 10]], "other": [[0] * 2_500] * 50}),
     "more than 100,000 values, the most privspec reads"),
])
def test_sizes_are_capped_before_use_and_the_cap_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, says: str) -> None:
    path = tmp_path / "record.json"
    path.write_text(content, encoding="utf-8")
    assert main(["import", "opacus", str(path), *SAID, "--sampling", "poisson"]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(("examples", "batch", "epochs", "says"), [
    ("100", "10", "inf", "--epochs': inf is not a finite number above 0"),
    ("100", "1000", "1", "--batch: must be at least 1 and at most 100, got 1,000"),
    ("10" + "0" * 20, "10", "1", "--examples: must be at least 1 and at most "
     "1,000,000,000,000, got 1,000,000,000,000,000,000,000"),
])
def test_tf_privacy_inputs_are_checked(capsys: pytest.CaptureFixture[str], examples: str,
                                       batch: str, epochs: str, says: str) -> None:
    assert main(["import", "tf-privacy", "--examples", examples, "--batch", batch,
                 "--epochs", epochs, "--noise", "1", *SAID, "--sampling", "poisson"]) == 2
    assert says in capsys.readouterr().err


def test_opacus_accountant_history_is_read_as_it_is(tmp_path: Path) -> None:
    """accountant.history itself, a bare list, as privspec.from_opacus takes it."""
    record = tmp_path / "history.json"
    record.write_text("[[1.0, 0.00427, 705]]", encoding="utf-8")
    out = tmp_path / "run.privspec.yaml"
    assert main(["import", "opacus", str(record), *SAID, "--sampling", "poisson",
                 "-o", str(out)]) == 0
    block = load_spec(out).mechanism.block
    assert (block.noise_multiplier, block.sampling_rate, block.steps) == (1.0, 0.00427, 705)
    assert "Opacus accountant history history.json" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize("relation", ["add-or-remove", "replace-one"])
def test_dp_event_takes_the_relation_it_was_exported_under(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], relation: str) -> None:
    source = tmp_path / "run.privspec.yaml"
    source.write_text(
        f"privspec: 1\ntitle: t\nunit: one training example\nneighbouring: {relation}\n"
        "mechanism:\n  dpsgd: {noise_multiplier: 1.0, sampling_rate: 0.01, steps: 300}\n",
        encoding="utf-8")
    event = tmp_path / "event.json"
    assert main(["export", "--dp-event", str(source), "-o", str(event)]) == 0
    recorded = "REPLACE_ONE" if relation == "replace-one" else "ADD_OR_REMOVE_ONE"
    other = "add-or-remove" if relation == "replace-one" else "replace-one"
    out = tmp_path / "again.privspec.yaml"
    capsys.readouterr()
    assert main(["import", "dp-event", str(event), "--unit", "one training example",
                 "--neighbouring", other, "--sampling", "poisson", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"neighboring_relation {recorded}" in err and f"--neighbouring says {other}" in err
    assert len(err.splitlines()) == 1 and not out.exists()
    assert main(["import", "dp-event", str(event), "--unit", "one training example",
                 "--sampling", "poisson", "-o", str(out)]) == 0
    assert load_spec(out).neighbouring == relation
    comments = [line for line in out.read_text(encoding="utf-8").splitlines()
                if line.startswith("#")]
    assert f"its neighbouring relation {recorded} ({relation})" in comments[1]
    assert "neighbouring" not in comments[2]  # (not among what the user asserted)
    assert privspec.evaluate(out).gdp.mu == pytest.approx(privspec.evaluate(source).gdp.mu,
                                                          rel=1e-9)


@pytest.mark.parametrize(("source", "record", "says"), [
    ("opacus", '{"history": [[1.1, 0.004, 100]],\n "history": [[0.5, 0.004, 100]]}',
     "line 2 column 2: the key 'history' is given twice in one object"),
    ("dp-event", '{"class_name": "SelfComposedDpEvent", "count": 10, "event": {"class_name": '
     '"GaussianDpEvent", "noise_multiplier": 5, "noise_multiplier": 0.5}}',
     "line 1 column 118: the key 'noise_multiplier' is given twice in one object"),
])
def test_a_key_given_twice_in_a_record_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, record: str,
        says: str) -> None:
    """Python's json kept the last value silently: the spec said what the record did not
    (the YAML reader refuses a key given twice too)."""
    path = tmp_path / "record.json"
    path.write_text(record, encoding="utf-8")
    assert main(["import", source, str(path), *SAID, "--sampling", "poisson"]) == 2
    err = capsys.readouterr().err
    assert f"record.json: {says}" in err and len(err.splitlines()) == 1, err


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_a_record_too_large_for_the_memory_left_is_refused_in_one_line(tmp_path: Path) -> None:
    """10 MB of numbers make 100 MB of Python floats: under a memory limit that was a
    MemoryError's traceback."""
    import subprocess
    import sys
    import textwrap

    record = tmp_path / "record.json"
    record.write_text('{"history": [[1.0, 0.004, 10]], "other": ['
                      + ", ".join(["0.5"] * 1_900_000) + "]}", encoding="utf-8")
    script = textwrap.dedent(f"""
        import resource, sys
        from privspec.workflows.importing import RecordError, read_record
        with open("/proc/self/status") as status:
            held = next(int(line.split()[1]) for line in status if line.startswith("VmSize"))
        limit = held * 1024 + 40 * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            read_record({str(record)!r}, "opacus")
        except RecordError as error:
            print(error)
            sys.exit(2)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={"OPENBLAS_NUM_THREADS": "1",
                               "PYTHONPATH": str(Path(privspec.__file__).parents[1])},
                          timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done
    assert done.stdout == (f"{record}: not enough memory to read its "
                           f"{record.stat().st_size:,} bytes; run privspec with more memory\n")
