"""The keys that bind a question to its call, and where used answers are kept: the
``--secret-file``/``--store`` options ``call``, ``resume`` and ``serve`` share, the
per-user key file, and the default answers file."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ._common import CliError
from ._parser import argument

if TYPE_CHECKING:
    import argparse
    from typing import TypeAlias

    from ..stores import AnswerStore

    Keys: TypeAlias = tuple["tuple[bytes, ...] | None", "AnswerStore | None"]


KEY_ARGS = (
    argument(
        "--secret-file",
        metavar="PATH",
        help="the key(s) that bind a question to its call, one per line, newest first "
        "(default: $TOOLNEXUS_SECRET; for call --no-input and resume, then your per-user "
        "key, ~/.config/toolnexus/secret); the same key lets another process resume",
    ),
    argument(
        "--store",
        metavar="URL",
        help="where answers already used are kept, shared by every process that names it: "
        "memory:, sqlite:PATH, postgresql://USER:PASSWORD@HOST/DB or redis://HOST:6379/0 "
        "(default: $TOOLNEXUS_STORE, else with a key "
        "sqlite:~/.cache/toolnexus/used-answers.sqlite3)",
    ),
    argument(
        "--answers-db",
        metavar="PATH",
        help="the same as --store sqlite:PATH",
    ),
)
"""The options that name the keys and the answer store (:func:`load_keys` reads them)."""


def load_keys(
    options: argparse.Namespace, *, consumes: bool = True, user_key: str | None = None
) -> Keys:
    """The signing keys and where used answers are kept.

    The keys: --secret-file, else TOOLNEXUS_SECRET, else (``user_key`` ``"create"`` for
    `call --no-input`, ``"read"`` for `resume`) the per-user key file (:func:`_user_key`),
    so the request one command prints is one a later `resume` can use. The store: the one
    --store (or --answers-db, or TOOLNEXUS_STORE) names; else, with a key, an SQLite file
    shared by every process (in the user's cache folder), so an answer resumes once across
    processes too. A command that never takes an answer from elsewhere (``consumes`` false:
    `call`) opens no default file."""
    from .._binding import load_secret, read_secret_file
    from ..stores._answers import SqliteAnswerStore

    path = getattr(options, "secret_file", None)
    try:
        keys = read_secret_file(path) if path is not None else load_secret()
    except OSError as exc:
        raise CliError(f"--secret-file: cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, TypeError) as exc:
        raise CliError(str(exc)) from None
    if not keys and user_key is not None:
        keys = _user_key(create=user_key == "create") or ()
    named = store_url(options)
    if named is not None:
        return keys or None, open_store(*named)
    if not keys:
        return None, None
    if not consumes:  # it answers only its own questions: this process's memory, on purpose
        from ..stores._answers import MemoryAnswerStore

        return keys, MemoryAnswerStore()
    db = _default_answers_db()
    try:
        os.makedirs(os.path.dirname(os.path.abspath(db)), exist_ok=True)
        return keys, SqliteAnswerStore(db)
    except (OSError, ImportError) as exc:
        raise CliError(
            f"cannot use the default answers file {db}: {exc}; choose another "
            "with --store sqlite:PATH"
        ) from None


def store_url(options: argparse.Namespace) -> tuple[str, str] | None:
    """(URL, where it came from) of the store the command line or the environment names."""
    from ..stores._common import STORE_ENV

    url = getattr(options, "store", None)
    db = getattr(options, "answers_db", None)
    if url is not None and db is not None:
        raise CliError(
            "give --store or --answers-db, not both (--answers-db PATH is --store sqlite:PATH)"
        )
    if url is not None:
        return url, "--store"
    if db is not None:
        return f"sqlite:{db}", "--answers-db"
    url = os.environ.get(STORE_ENV, "").strip()
    return (url, STORE_ENV) if url else None


def open_store(url: str, where: str, *, tasks: bool = False) -> Any:
    """The answer store (or, with ``tasks``, the task store) ``url`` names."""
    from ..errors import InvalidValueError
    from ..stores._open import open_named, open_task_named

    try:
        return (open_task_named if tasks else open_named)(url, where)
    except InvalidValueError as exc:
        raise CliError(str(exc)) from None
    except (ImportError, OSError) as exc:  # a missing extra; StoreUnavailableError
        raise CliError(f"{where}: {exc}") from exc


USER_KEY_FILE = "secret"
"""The per-user key's file name, in :func:`user_key_path`'s folder."""


def user_key_path() -> str:
    """Where the per-user key lives: ``$XDG_CONFIG_HOME/toolnexus/secret`` (else
    ``~/.config/toolnexus/secret``; on Windows ``%APPDATA%\\toolnexus\\secret``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or (
        os.environ.get("APPDATA") if os.name == "nt" else None
    )
    base = base or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "toolnexus", USER_KEY_FILE)


def _user_key(*, create: bool) -> tuple[bytes, ...] | None:
    """The per-user key that binds `call --no-input` requests to a later `resume` when no
    key is configured: read from :func:`user_key_path`, or (``create``) made there on
    first use — 32 random bytes, the file private to the user (0600, its folder 0700),
    published atomically so two first calls at once agree on one key. None when it does
    not exist and ``create`` is false.

    A key file others can read is refused (anyone who can read it can forge answers), with
    the command that fixes it; so is one that cannot be created, with the option that
    names another."""
    from .._binding import read_secret_file

    path = user_key_path()
    if not os.path.exists(path):
        if not create:
            return None
        try:
            _create_user_key(path)
        except OSError as exc:
            raise CliError(
                f"no key is configured and the per-user key cannot be created at {path} "
                f"({exc.strerror or exc}), so no later `resume` could use this request; give "
                "one: --secret-file PATH (a file with one random line of 16+ bytes, made e.g. "
                "with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > PATH; "
                "chmod 600 PATH), or set TOOLNEXUS_SECRET"
            ) from None
    if os.name != "nt":
        info = os.stat(path)
        if info.st_mode & 0o077 or info.st_uid != os.getuid():
            raise CliError(
                f"the per-user key {path} is readable or writable by others (mode "
                f"{info.st_mode & 0o777:04o}), so they could answer your questions; make it "
                f"yours alone: chmod 600 {path}"
                + (" (and own it)" if info.st_uid != os.getuid() else "")
            )
    try:
        return read_secret_file(path)
    except OSError as exc:
        raise CliError(f"cannot read the per-user key {path}: {exc.strerror or exc}") from None
    except (ValueError, TypeError) as exc:
        raise CliError(f"{exc}; delete {path} and a new key is made on the next call") from None


def _create_user_key(path: str) -> None:
    import secrets
    import tempfile

    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)  # makedirs' mode is subject to the umask
    handle, draft = tempfile.mkstemp(prefix=".secret-", dir=folder)  # created 0600
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(
                "# toolnexus: the key that binds `call --no-input` requests to `resume`.\n"
                "# Keep it private (mode 0600). Delete it to start over (pending requests\n"
                "# then cannot be resumed).\n"
                f"{secrets.token_urlsafe(32)}\n"
            )
        try:
            os.link(draft, path)  # never replaces a key another process made first
        except FileExistsError:
            pass
        except OSError:  # no hard links here: exclusive rename is the next best thing
            if not os.path.exists(path):
                os.replace(draft, path)
    finally:
        if os.path.exists(draft):
            os.unlink(draft)


def _default_answers_db() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "toolnexus", "used-answers.sqlite3")
