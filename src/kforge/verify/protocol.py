"""The harness <-> worker protocol, the trust boundary: one frozen model per request and per reply.

Requests travel as one JSON line each on the worker's stdin; replies as one JSON line each on its reply
descriptor. The worker validates what it is asked (`parse_request`); the harness validates every reply against
the model it expects (`read_reply`), because a candidate shares the worker's process and can write anything on
that descriptor: a reply that does not fit is a `MalformedReply`, which the harness turns into a verdict.

No reply carries a verdict. The worker hands over data (outputs through files, raw timing samples, the operators
it saw) and failures of a fixed set of kinds; whether a candidate is correct, and how fast, is decided by the
harness alone. A reply that claims more than a failure (`kind: "correct"`) fits no model and is malformed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from kforge.verify.timing import TimingPlan

# ---- requests (harness -> worker) ----------------------------------------------------------------------------


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LoadRequest(_Message):
    """Import the problem and, with `solution`, the candidate (its extensions compile here); build the model
    under `seed` and keep it as `role`; `compile` wraps it in torch.compile (the reference's baseline).
    `language` is the candidate's: with one the run phase names (cpp, cuda), the worker refuses programs,
    processes and sockets once the candidate is loaded (verify/run_phase.py); None leaves them as they were."""

    op: Literal["load"] = "load"
    problem: str
    solution: str | None = None
    seed: int
    platform: str
    compile: bool = False
    role: str = "candidate"
    language: str | None = None


class RunRequest(_Message):
    """Call the loaded model `calls` times on the inputs of (`seed`, `variant`); outputs to the file `out`."""

    op: Literal["run"] = "run"
    seed: int
    variant: int = 0
    calls: int = 2
    record_ops: bool = True
    out: str


class TimeRequest(_Message):
    """Run one round of timed calls of the model loaded as `role`; spot-check outputs to the file `out`."""

    op: Literal["time"] = "time"
    plan: TimingPlan
    out: str
    role: str | None = None
    variant: int = 0


class BuildRequest(_Message):
    """Import a candidate only, so that its extensions compile into the build cache."""

    op: Literal["build"] = "build"
    solution: str


class StageRequest(_Message):
    """Draw `count` input sets (seeds `seed`, `seed + 1`, ...) for a batch of calls of the model loaded as `role`,
    and hold them until the batch runs: drawing stays out of the harness's clock."""

    op: Literal["stage"] = "stage"
    seed: int
    count: int = Field(ge=1, le=4096)
    role: str | None = None
    variant: int = 0


class BatchRequest(_Message):
    """Call the model once on each of the staged input sets `start` to `start + count`, back to back, synchronize
    the device and answer. The harness times this request end to end on its own clock; `count=0` answers at
    once (the request's own cost)."""

    op: Literal["batch"] = "batch"
    start: int = Field(0, ge=0, le=4096)
    count: int = Field(ge=0, le=4096)
    hold: bool = True  # False: let the outputs go before answering (a warm-up batch, whose outputs fill the
    #                    allocator's cache with as many blocks as the timed batch will hold)


class HandOverRequest(_Message):
    """Write the outputs of the batch's calls `calls` (chosen by the harness after the batch) to the file `out`."""

    op: Literal["hand_over"] = "hand_over"
    calls: list[int] = Field(max_length=16)
    out: str


class TryRequest(_Message):
    """The variant search (verify/search.py): import the variant `solution` beside any tried before, build its
    model under `seed`, call it once on the inputs of `input_seed` (output to the file `out`), time it by `plan`,
    then let it go. The problem and platform are named as in `load`; the first try loads them."""

    op: Literal["try"] = "try"
    problem: str
    platform: str
    solution: str
    seed: int
    input_seed: int
    plan: TimingPlan
    out: str


class ProfileRequest(_Message):
    op: Literal["profile"] = "profile"
    seed: int
    calls: int = 5


class ExitRequest(_Message):
    op: Literal["exit"] = "exit"


Request = Annotated[LoadRequest | RunRequest | TimeRequest | StageRequest | BatchRequest | HandOverRequest
                    | BuildRequest | TryRequest | ProfileRequest | ExitRequest, Field(discriminator="op")]
_REQUEST: TypeAdapter[Any] = TypeAdapter(Request)


def parse_request(line: str | bytes) -> Request:
    """The request on one line (ValidationError when it is not one)."""
    return _REQUEST.validate_json(line)


# ---- replies (worker -> harness) -----------------------------------------------------------------------------


class _Reply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: Literal[True] = True
    worker_s: float = 0.0


class SandboxReport(BaseModel):
    """What the worker's kernel sandbox enforced, and one line for each part it could not."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enforced: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=20)
    missing: list[Annotated[str, Field(max_length=400)]] = Field(default_factory=list, max_length=20)


class Greeting(_Reply):
    ready: Literal[True] = True
    pid: int
    confinement: SandboxReport


class LoadReply(_Reply):
    build_s: float = 0.0
    builds: int = 0


class BuildReply(LoadReply):
    """A build worker's answer: what it compiled stays in its directory, which the harness keeps once it is dead."""


class RunReply(_Reply):
    ops: list[str]


class TimeReply(_Reply):
    times_ns: list[int]
    second_clock_ns: list[int]
    lead_in_ns: list[int]
    host_bound: list[bool]
    loop_ns: int  # the whole request, as the worker's second clock saw it
    spots: list[int]


class TryReply(_Reply):
    build_s: float  # this variant's share of the worker's compile time
    times_ns: list[int]


class StageReply(_Reply):
    count: int


class BatchReply(_Reply):
    count: int


class HandOverReply(_Reply):
    calls: list[int]


class ProfileReply(_Reply):
    profile: dict[str, Any]  # validated by the profiling schema where it is used


# The only failures a worker can report: each becomes the verdict of the same name. "correct", "incorrect" and
# "timeout" are not among them: the first two are the harness's to decide, the last its clock's.
FailureKind = Literal["compile_error", "runtime_error", "rejected", "crashed"]


class Failure(BaseModel):
    """The candidate failed in a way that deserves a verdict (`kind` names it), or the worker could not serve."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: Literal[False] = False
    kind: FailureKind
    message: str
    rule: str | None = None
    worker_s: float = 0.0


class MalformedReply(Exception):
    """A reply that fits no model of the protocol: the one-line reason."""


ReplyT = TypeVar("ReplyT", bound=_Reply)


def read_reply(line: bytes, expected: type[ReplyT]) -> ReplyT | Failure:
    """The reply on one line, as `expected` or as a Failure; MalformedReply when it is neither."""
    try:
        data = TypeAdapter(dict[str, Any]).validate_json(line)
    except ValidationError:
        raise MalformedReply("it is not a JSON object") from None
    model: type[ReplyT] | type[Failure] = Failure if data.get("ok") is False else expected
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the reply"
        raise MalformedReply(f"{where}: {first['msg']}"[:200]) from None
