"""Building an optimize request: what a user asked for, checked once, with one error type whose message is one
line; the same checks for every command that optimizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.pipelines.request import BUILTIN, OptimizeError, build_request, resume_request, start_run
from kforge.store import Store
from kforge.verify.evaluate import EvalOptions
from tests.conftest import CANDIDATES, PROBLEMS

LEAKY = PROBLEMS / "leaky_scale.py"
HONEST = CANDIDATES / "leaky_scale" / "honest.py"


def test_the_builtin_engine_gets_a_language_it_writes_and_a_model_gets_the_platforms_first() -> None:
    engine = build_request(LEAKY, model=None, platform="cpu")
    assert engine.model == BUILTIN and engine.language == "cpp" and engine.pipeline == "loop"
    chosen = build_request(LEAKY, model="openai:some-model", platform="cpu", language="triton")
    assert chosen.language == "triton" and chosen.model == "openai:some-model"


@pytest.mark.parametrize(("changes", "message"), [
    ({"pipeline": "magic"}, "unknown pipeline 'magic'; choose loop or staged"),
    ({"stages": "fusion"}, "--kernel and --stages belong to the staged pipeline: add --pipeline staged"),
    ({"platform": "abacus"}, "abacus"),
    ({"language": "cuda"}, "platform cpu does not run cuda candidates"),
    ({"pipeline": "staged"}, "the builtin engine runs on its own"),
    ({"pipeline": "staged", "model": "openai:m", "stages": "no-such-stage"}, "no-such-stage"),
    ({"reference": Path("missing.py")}, "solution file not found: missing.py"),
])
def test_a_request_that_cannot_run_is_one_error_with_one_line(changes: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"model": None, "platform": "cpu", **changes}
    with pytest.raises(OptimizeError) as caught:
        build_request(LEAKY, **arguments)  # type: ignore[arg-type]
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_problem_is_the_same_error(tmp_path: Path) -> None:
    with pytest.raises(OptimizeError, match="problem file not found"):
        build_request(tmp_path / "nothing.py", model=None, platform="cpu")


def test_a_recorded_request_is_read_back_the_same_for_a_resume(tmp_path: Path) -> None:
    options = EvalOptions(trials=1, baselines=("eager",))
    request = build_request(LEAKY, model="openai:m", platform="cpu", pipeline="staged", kernel=HONEST,
                            stages="fusion", eval_options=options, allow_vendor_gemm=True, send_images=True)
    with Store(tmp_path / "runs.db") as store:
        run_id = start_run(store, request)
        again = resume_request(store, run_id, options)
    assert again.pipeline == "staged" and again.staged.stages == request.staged.stages == ("fusion",)
    assert again.kernel == HONEST and again.allow_vendor_gemm and again.send_images
    assert again.evaluation_options().policy.vendor_gemm
