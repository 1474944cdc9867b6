"""The corpus a data recipe processes: real text from this Python's standard library.

Every machine with CPython has it, so nothing is downloaded. Three sources, each a fixed
selection (files ordered by the SHA-256 of `CORPUS_VERSION` and their path, the first few
taken), give the training pool:

- `modules`: 50 standard-library modules (`.py`, at most 100 kB each), outside the folders that
  Linux distributions ship apart (`idlelib`, `lib2to3`, `tkinter`, `turtledemo`, `distutils`,
  `ensurepip`) and outside `test`, `encodings` and `pydoc_data`: code, docstrings and comments;
- `codec_tables`: 8 charmap codecs of `encodings/` (`cp*`, `iso8859_*`, `mac_*`, `koi8_*`):
  256-line decoding tables of escapes, and codec classes repeated word for word in every file;
- `test_data`: 12 data files of the test suite (`test/decimaltestdata/*.decTest`,
  `test/test_email/data/msg_*.txt`, `test/*_testcases.txt`): long repetitive tables of test
  cases, and e-mails with base64 and quoted-printable blobs.

A document is one paragraph of a file (a run of lines between blank lines), dedented; its
text is the file's, decoded as UTF-8 (an undecodable byte reads as U+FFFD).

The evaluation set is clean prose kept apart from the pool: the docstrings of the modules that
come after the 50 training modules in the same order (so never a training file), split into
paragraphs, kept when a paragraph has at least 8 words, no indented line and no doctest
(`>>>`, `...`), and does not occur in the training text; modules are taken until
`EVAL_CHARS` characters are reached.

The corpus is a pure function of the standard library's files, so it is the same on every
machine with the same Python version; another version (even a patch release) may give another
corpus. `Corpus.name` carries the Python version and `Corpus.digest` the content, and both are
reported with every measurement.
"""

from __future__ import annotations

import ast
import hashlib
import os
import platform
import re
import sysconfig
import textwrap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CORPUS_VERSION = "stdlib-v1"
"""Changes whenever the selection or the splitting changes: it salts the selection's order."""
MAX_MODULE_BYTES = 100_000
EVAL_CHARS = 60_000
PROSE_MIN_WORDS = 8
SPLIT_PACKAGES = frozenset(
    {"idlelib", "lib2to3", "tkinter", "turtledemo", "distutils", "ensurepip"}
)
"""Shipped apart from the interpreter by Linux distributions: left out, for portability."""
NOT_MODULES = frozenset({"site-packages", "test", "tests", "idle_test", "encodings", "pydoc_data"})
CODEC_TABLE = re.compile(r"(cp\d+|iso8859_\d+|mac_\w+|koi8_\w+)\.py")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


class CorpusError(RuntimeError):
    """This Python's standard library lacks files the corpus needs; one sentence."""


@dataclass(frozen=True)
class Source:
    """A part of the training pool: the files it may take, and how many it takes."""

    name: str
    files: Callable[[Path], Iterable[Path]]
    count: int


@dataclass(frozen=True)
class Document:
    """One paragraph of one file of the standard library."""

    text: str
    source: str
    path: str
    """The file, relative to the standard library's folder."""


@dataclass(frozen=True)
class Corpus:
    """The training pool's documents and the clean held-out prose."""

    name: str
    """`cpython-<version>-<CORPUS_VERSION>`."""
    documents: tuple[Document, ...]
    evaluation: tuple[str, ...]
    evaluation_files: tuple[str, ...]

    @property
    def texts(self) -> list[str]:
        return [document.text for document in self.documents]

    @property
    def training_files(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(document.path for document in self.documents))

    @property
    def digest(self) -> str:
        """The first 16 hex digits of the SHA-256 of every document and evaluation paragraph."""
        digest = hashlib.sha256()
        for text in (*self.texts, "\x00", *self.evaluation):
            digest.update(text.encode("utf-8", "surrogatepass") + b"\x00")
        return digest.hexdigest()[:16]


def corpus_name() -> str:
    """The name of the corpus this interpreter builds."""
    return (
        f"{platform.python_implementation().lower()}-{platform.python_version()}-{CORPUS_VERSION}"
    )


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _modules(root: Path) -> Iterator[Path]:
    skipped = NOT_MODULES | SPLIT_PACKAGES | {"__pycache__"}
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in skipped]
        for name in files:
            path = Path(folder, name)
            if name.endswith(".py") and path.stat().st_size <= MAX_MODULE_BYTES:
                yield path


def _codec_tables(root: Path) -> Iterator[Path]:
    return (path for path in (root / "encodings").glob("*.py") if CODEC_TABLE.fullmatch(path.name))


def _test_data(root: Path) -> Iterator[Path]:
    test = root / "test"
    yield from (test / "decimaltestdata").glob("*.decTest")
    yield from (test / "test_email" / "data").glob("msg_*.txt")
    yield from test.glob("*_testcases.txt")


SOURCES = (
    Source("modules", _modules, 50),
    Source("codec_tables", _codec_tables, 8),
    Source("test_data", _test_data, 12),
)


def ordered(root: Path, paths: Iterable[Path]) -> list[str]:
    """Paths relative to `root`, in the corpus's fixed pseudo-random order."""
    relative = {path.relative_to(root).as_posix() for path in paths}
    return sorted(
        relative, key=lambda name: hashlib.sha256(f"{CORPUS_VERSION}:{name}".encode()).hexdigest()
    )


def paragraphs(text: str) -> list[str]:
    """The paragraphs of `text`: runs of lines between blank lines, dedented, trimmed."""
    found = (textwrap.dedent(block).strip("\n").rstrip() for block in _BLANK_LINE.split(text))
    return [paragraph for paragraph in found if paragraph.strip()]


def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n")


@cache
def build_corpus(root: Path | None = None) -> Corpus:
    """The corpus of the standard library at `root` (default: this interpreter's)."""
    root = root or stdlib_root()
    documents: list[Document] = []
    held_out: list[str] = []
    for source in SOURCES:
        names = ordered(root, source.files(root))
        if len(names) < source.count:
            raise CorpusError(
                f"the standard library at {root} has {len(names)} files for the corpus's "
                f"{source.name}, fewer than the {source.count} it takes "
                "(is its test suite installed?)"
            )
        for name in names[: source.count]:
            documents += [
                Document(text, source.name, name) for text in paragraphs(read_text(root / name))
            ]
        if source.name == "modules":
            held_out = names[source.count :]
    evaluation, files = _evaluation(root, held_out, "\n".join(d.text for d in documents))
    return Corpus(corpus_name(), tuple(documents), tuple(evaluation), tuple(files))


def _evaluation(root: Path, modules: list[str], training_text: str) -> tuple[list[str], list[str]]:
    """Prose paragraphs of the held-out modules' docstrings, up to `EVAL_CHARS` characters."""
    evaluation: list[str] = []
    files: list[str] = []
    for name in modules:
        found = [
            p for p in _docstring_paragraphs(root / name) if is_prose(p) and p not in training_text
        ]
        if found:
            evaluation += found
            files.append(name)
        if sum(map(len, evaluation)) >= EVAL_CHARS:
            break
    return evaluation, files


def _docstring_paragraphs(path: Path) -> list[str]:
    try:
        tree = ast.parse(read_text(path))
    except SyntaxError:
        return []
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    found: list[str] = []
    for node in ast.walk(tree):
        docstring = ast.get_docstring(node) if isinstance(node, documented) else None
        if docstring:
            found += paragraphs(docstring)
    return found


def is_prose(paragraph: str) -> bool:
    """Sentences, not code: enough words, no indented line, no doctest."""
    lines = paragraph.split("\n")
    if any(line.startswith((" ", "\t", ">>>", "...")) for line in lines):
        return False
    return len(paragraph.split()) >= PROSE_MIN_WORDS
