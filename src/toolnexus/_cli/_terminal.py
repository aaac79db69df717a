"""The terminal: a question asked at the prompt (a form field by field), the spinner, and
one call run on a worker thread while the main thread prompts and takes Ctrl-C."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from .._wire import refuse_json_constant
from ._common import EXIT_CANCELLED, outcome_of

if TYPE_CHECKING:
    from .._host import ToolEvent
    from .._result import ToolResult
    from .._suspension import Answer, Request
    from .._toolkit import Toolkit
    from ._answer_keys import Keys


class Terminal:
    """Reads answers from stdin line by line and writes prompts to stderr."""

    def __init__(self, stdin: IO[str] | None, stderr: IO[str]) -> None:
        self.stdin = stdin
        self.stderr = stderr
        # Piped answers do not echo; write them back so the transcript reads as a dialogue.
        self.echo = stdin is not None and not _isatty(stdin)
        self.mid_line = False  # a prompt label is waiting for its answer

    def say(self, text: str) -> None:
        if self.mid_line:
            text = "\n" + text
            self.mid_line = False
        self.stderr.write(text + "\n")
        self.stderr.flush()

    def ask(self, label: str) -> str | None:
        """One line of input without its newline; None at end of input."""
        self.stderr.write(label)
        self.stderr.flush()
        self.mid_line = True
        line = self.stdin.readline() if self.stdin is not None else ""
        if not line:
            self.say("  (end of input: declined)")
            return None
        self.mid_line = False
        text = line.rstrip("\r\n")
        if self.echo:
            self.stderr.write(text + "\n")
            self.stderr.flush()
        return text


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def answer_at_prompt(term: Terminal, request: Request) -> Answer:
    """Ask the human ``request`` at the terminal; end of input declines."""
    from .._suspension import Answer

    term.say(f"? {request.prompt}" if request.prompt else f"? the tool asks ({request.kind})")
    if request.url:
        term.say(f"  {request.url}")
    if request.expires_at:
        term.say(f"  (answer before {request.expires_at})")
    schema = (request.data or {}).get("schema")
    fields = schema if isinstance(schema, Mapping) and schema.get("properties") else None
    if request.kind == "approval":
        if not _ask_yes_no(term, "  approve? [y/N] "):
            return Answer.decline(request)
        if fields is None:
            return Answer.accept(request)
    elif request.kind == "authorization":
        text = term.ask("  open the url above, finish there, then press Enter (n to decline): ")
        if text is None or text.strip().lower() in ("n", "no"):
            return Answer.decline(request)
        return Answer.accept(request)
    if fields is not None:
        data = _ask_fields(term, fields)
        return Answer.decline(request) if data is None else Answer.accept(request, data)
    text = term.ask("  > ")
    if text is None:
        return Answer.decline(request)
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    return Answer.accept(request, parsed if isinstance(parsed, dict) else {"answer": text})


def _ask_yes_no(term: Terminal, label: str) -> bool:
    while True:
        text = term.ask(label)
        if text is None:
            return False
        word = text.strip().lower()
        if word in ("y", "yes"):
            return True
        if word in ("", "n", "no"):
            return False
        term.say("  please answer y or n")


_FORM_ROUNDS = 3
"""How many times a form whose fields each pass, but not the whole, is asked from the start."""


def _ask_fields(term: Terminal, schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """Ask each property of a flat object schema; None when input ends (a decline).

    A required key the schema does not describe is asked too (any JSON value, or the text
    itself): without it no answer could ever fit. A whole answer that still does not fit
    (a rule across fields) is asked again from the start, at most :data:`_FORM_ROUNDS`
    times; then the question is declined, saying why."""
    from ..validation import validate

    properties: dict[str, Any] = dict(schema.get("properties") or {})
    required = [key for key in schema.get("required") or () if isinstance(key, str)]
    for key in required:
        properties.setdefault(key, {})
    for round_ in range(1, _FORM_ROUNDS + 1):
        data: dict[str, Any] = {}
        for key, prop in properties.items():
            prop = prop if isinstance(prop, Mapping) else {}
            label = _field_label(key, prop, key in required)
            while True:
                text = term.ask(label)
                if text is None:
                    return None
                if text == "":
                    if "default" in prop:
                        data[key] = prop["default"]
                        break
                    if key in required:
                        term.say("  a value is required (end of input declines)")
                        continue
                    break
                value = _field_value(text, prop)
                problems = validate(prop, value)
                if not problems:
                    data[key] = value
                    break
                term.say(f"  invalid: {'; '.join(problems)}; try again")
        problems = validate(schema, data)
        if not problems:
            return data
        if round_ == _FORM_ROUNDS:
            term.say(
                f"  invalid: {'; '.join(problems)}; no answer fitted the question's schema in "
                f"{_FORM_ROUNDS} tries: declined"
            )
            return None
        term.say(f"  invalid: {'; '.join(problems)}; once more from the start")
    return None  # pragma: no cover - the loop returns on its last round


def _field_label(key: str, prop: Mapping[str, Any], required: bool) -> str:
    parts = [_type_words(prop)]
    choices = _choices(prop)
    if choices:
        parts.append(
            "one of: "
            + ", ".join(_show(value) + (f" ({title})" if title else "") for value, title in choices)
        )
    if not required and "default" not in prop:
        parts.append("optional")
    about = prop.get("title") or prop.get("description")
    label = f"  {key}" + (f" — {about}" if isinstance(about, str) and about else "")
    words = "; ".join(p for p in parts if p)
    label += f" ({words})" if words else ""
    if "default" in prop:
        label += f" [{_show(prop['default'])}]"
    return label + ": "


def _type_words(prop: Mapping[str, Any]) -> str:
    kind = prop.get("type")
    if kind == "boolean":
        return "yes/no"
    words = kind if isinstance(kind, str) else ""
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and high is not None:
        words += f", {_show(low)} to {_show(high)}"
    elif low is not None:
        words += f", at least {_show(low)}"
    elif high is not None:
        words += f", at most {_show(high)}"
    return words


def _choices(prop: Mapping[str, Any]) -> list[tuple[Any, str | None]]:
    """The values a field takes, each with its title when the schema gives one: an
    ``enum``, or a ``oneOf``/``anyOf`` of ``const`` (+ ``title``) — MCP's titled choices,
    which a legacy ``enumNames`` list also becomes on arrival."""
    enum = prop.get("enum")
    if isinstance(enum, list):
        return [(value, None) for value in enum]
    for keyword in ("oneOf", "anyOf"):
        options = prop.get(keyword)
        if not isinstance(options, list) or not options:
            continue
        if all(isinstance(option, Mapping) and "const" in option for option in options):
            return [(option["const"], _title(option)) for option in options]
    return []


def _title(option: Mapping[str, Any]) -> str | None:
    title = option.get("title")
    return title if isinstance(title, str) else None


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _field_value(text: str, prop: Mapping[str, Any]) -> Any:
    """Turn one typed line into the value a field expects (validation judges it after)."""
    choices = _choices(prop)
    for value, _ in choices:
        if text == _show(value):
            return value
    # A value or a title, in any case: "production" picks the choice titled "Production".
    word = text.strip().lower()
    folded = [
        value
        for value, title in choices
        if (isinstance(value, str) and value.lower() == word) or (title or "").lower() == word
    ]
    if len(folded) == 1:
        return folded[0]
    kind = prop.get("type")
    if kind == "string":
        return text
    if kind == "boolean":
        word = text.strip().lower()
        if word in ("y", "yes", "true"):
            return True
        if word in ("n", "no", "false"):
            return False
        return text
    try:
        return json.loads(text, parse_constant=refuse_json_constant)
    except ValueError:
        return text


class _Spinner:
    """Elapsed time (and progress) on one stderr line, only when stderr is a terminal."""

    FRAMES = "|/-\\"
    DELAY = 0.25  # seconds before showing: quick calls print nothing

    def __init__(self, stream: IO[str], label: str) -> None:
        import time

        self.stream = stream
        self.label = label
        self.enabled = _isatty(stream)
        self.started = time.monotonic()
        self.frame = 0
        self.width = 0
        self.note = ""

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        # Called from the tool's thread; one str assignment is atomic enough for a display.
        amount = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        self.note = f"{amount} {message}" if message else amount

    def tick(self) -> None:
        import time

        elapsed = time.monotonic() - self.started
        if not self.enabled or elapsed < self.DELAY:
            return
        self.frame = (self.frame + 1) % len(self.FRAMES)
        text = f"{self.FRAMES[self.frame]} {self.label} {elapsed:.1f}s"
        if self.note:
            text += f"  {self.note}"
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def run_call(
    toolkit: Toolkit,
    name: str,
    args: dict[str, Any],
    *,
    timeout_ms: int | None,
    ask: bool,
    term: Terminal,
    resume: tuple[Request | ToolResult, Answer] | None = None,
    keys: Keys | None = None,
) -> tuple[ToolResult, str]:
    """Run one call on a worker thread; the main thread prompts, spins and takes Ctrl-C.

    Returns the result and its outcome (``ok``, ``error``, ``pending``, ``timeout``,
    ``cancelled``). A second Ctrl-C ends the process at once with code 130.
    """
    import queue
    import threading

    from .._cancellation import CancellationTokenSource
    from .._host import Host
    from .._suspension import Answer

    inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
    events: list[ToolEvent] = []
    source = CancellationTokenSource()
    spinner = _Spinner(term.stderr, name)

    def wait_for(request: Request) -> Answer:
        # Runs on the host's thread; the human is asked on the main thread, which alone
        # receives Ctrl-C, so an interrupt can always cancel and unblock us.
        reply: queue.Queue[Answer] = queue.Queue()
        inbox.put(("ask", (request, reply)))
        return reply.get()

    # At the terminal a tool's own "cancelled after N step(s)" is worth a moment's wait.
    secret, store = keys if keys is not None else (None, None)
    host = Host(
        toolkit,
        wait_for=wait_for if ask else None,
        on_event=events.append,
        cancel_grace_ms=100,
        secret=secret,
        answer_store=store,
    )

    def work() -> None:
        try:
            if resume is None:
                result = host.call(
                    name,
                    args,
                    timeout_ms=timeout_ms,
                    cancellation_token=source.token,
                    progress=spinner.progress,
                )
            else:
                result = host.resume(
                    name,
                    args,
                    resume[0],
                    resume[1],
                    timeout_ms=timeout_ms,
                    cancellation_token=source.token,
                    progress=spinner.progress,
                )
        except BaseException as exc:  # handed to the main thread, which re-raises it
            inbox.put(("crash", exc))
        else:
            inbox.put(("done", result))

    worker = threading.Thread(target=work, name="toolnexus-cli-call", daemon=True)
    interrupted = False
    asking: tuple[Request, queue.Queue[Answer]] | None = None
    while True:
        try:
            if worker.ident is None:
                # Started inside the try: a Ctrl-C that lands as soon as the tool runs
                # (before this thread is back in the loop) still cancels the call.
                worker.start()
            try:
                # A short poll, not a blocking get: the spinner ticks and Ctrl-C is seen
                # promptly on every platform.
                kind, payload = inbox.get(timeout=0.1)
            except queue.Empty:
                spinner.tick()
                continue
            if kind == "ask":
                spinner.clear()
                asking = payload
                request, reply = payload
                reply.put(answer_at_prompt(term, request))
                asking = None
                continue
            spinner.clear()
            if kind == "crash":
                raise payload
            result: ToolResult = payload
            break
        except KeyboardInterrupt:
            spinner.clear()
            if interrupted:
                term.say("interrupted")
                sys.stdout.flush()
                os._exit(EXIT_CANCELLED)
            interrupted = True
            source.cancel()
            term.say("cancelling… (Ctrl-C again to exit at once)")
            if asking is not None:
                asking[1].put(Answer.decline(asking[0], "cancelled"))
                asking = None
    after_the_call()
    host_close = getattr(host, "close", None)
    if host_close is not None:
        host_close()
    outcome = events[-1].outcome if events else outcome_of(result)
    if interrupted and result.is_error and outcome not in ("timeout",):
        outcome = "cancelled"
    return result, outcome


def after_the_call() -> None:
    """The call is over: from here on Ctrl-C cannot change its outcome, so it no longer
    raises. Without this, a Ctrl-C landing after the result was printed (or while the
    interpreter exits) escaped as an uncaught KeyboardInterrupt, and Python ends such a
    process by the signal itself (exit -2, neither the call's code nor 130). A second
    Ctrl-C still exits at once with 130, as it does during the call."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _late_interrupt)


_late_interrupts: list[int] = []


def _late_interrupt(signum: int, frame: object) -> None:
    if _late_interrupts:
        os._exit(EXIT_CANCELLED)
    _late_interrupts.append(signum)
