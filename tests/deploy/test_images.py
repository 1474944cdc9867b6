"""The service images build from the repository alone, and never from a package of the same name.

No Docker engine is needed. Each Dockerfile under `services/` must copy exactly the repository
packages its service needs (the closure of its `pyproject.toml` dependencies among the
repository's own packages, extras included), build all of them, and install the service. The
Dockerfiles' own pip commands then run here against a stand-in index that offers every
repository package name at a higher version, on stand-in wheels of the repository's packages:
the image must take each repository package from its own wheel, and must refuse to build when
a repository package is missing from the copies rather than take the index's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
PACKAGE_ROOTS = ("libs", "services", "benchmarks")
# The extras an image installs, beyond its service's plain dependencies.
IMAGE_EXTRAS = {"services/actuator/Dockerfile.gpu": frozenset({"gpu"})}
WHEELS = "/wheels"
STAND_IN_INDEX_VERSION = "99.0"


@dataclass(frozen=True)
class Package:
    name: str
    folder: str
    version: str
    requires: tuple[Requirement, ...]
    extras: dict[str, tuple[Requirement, ...]]


def _requirements(raw: list[str]) -> tuple[Requirement, ...]:
    return tuple(Requirement(line) for line in raw)


def repository_packages() -> dict[str, Package]:
    """Every package of the repository by its canonical name, read from its pyproject.toml."""
    packages: dict[str, Package] = {}
    for root in PACKAGE_ROOTS:
        for path in sorted((REPO / root).glob("*/pyproject.toml")):
            project = tomllib.loads(path.read_text())["project"]
            extras = project.get("optional-dependencies", {})
            package = Package(
                name=canonicalize_name(project["name"]),
                folder=str(path.parent.relative_to(REPO)),
                version=project["version"],
                requires=_requirements(project.get("dependencies", [])),
                extras={extra: _requirements(lines) for extra, lines in extras.items()},
            )
            packages[package.name] = package
    return packages


def closure(root: str, extras: frozenset[str], packages: dict[str, Package]) -> set[str]:
    """The repository packages `root` (with `extras`) needs, itself included."""
    seen: set[tuple[str, frozenset[str]]] = set()
    pending = [(canonicalize_name(root), extras)]
    while pending:
        name, wanted = pending.pop()
        if name not in packages or (name, wanted) in seen:
            continue
        seen.add((name, wanted))
        package = packages[name]
        requirements = [*package.requires]
        for extra in wanted:
            requirements += package.extras[extra]
        pending += [(canonicalize_name(r.name), frozenset(r.extras)) for r in requirements]
    return {name for name, _ in seen}


@dataclass(frozen=True)
class Image:
    """What a Dockerfile copies and runs, its RUN lines joined and split at `&&`."""

    path: Path
    copied: list[str]
    stages: list[list[str]]  # per stage: its RUN commands, in order

    @property
    def key(self) -> str:
        return str(self.path.relative_to(REPO))

    def runs(self) -> list[str]:
        return [run for stage in self.stages for run in stage]

    def pip_commands(self, verb: str) -> list[list[str]]:
        commands = []
        for run in self.runs():
            for part in run.split("&&"):
                words = shlex.split(part)
                if words[:2] == ["pip", verb]:
                    commands.append(words)
        return commands


def read_image(path: Path) -> Image:
    text = re.sub(r"\\\n", " ", path.read_text())
    copied: list[str] = []
    stages: list[list[str]] = []
    for line in text.splitlines():
        instruction, _, rest = line.strip().partition(" ")
        if instruction == "FROM":
            stages.append([])
        elif instruction == "COPY" and not rest.startswith("--from"):
            source, _target = rest.split()
            copied.append(source)
        elif instruction == "RUN":
            stages[-1].append(re.sub(r"^(--mount=\S+\s+)+", "", rest.strip()))
    return Image(path, copied, stages)


def _images() -> list[Path]:
    return sorted(
        path
        for path in (REPO / "services").glob("*/Dockerfile*")
        if not path.name.endswith(".dockerignore")
    )


def _service_of(image: Image) -> str:
    return f"discospace-{image.path.parent.name}"


def _extras_of(image: Image) -> frozenset[str]:
    return IMAGE_EXTRAS.get(image.key, frozenset())


def _option_values(words: list[str], option: str) -> list[str]:
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word == option]


def _arguments(words: list[str]) -> list[str]:
    """The positional arguments of a pip command (options with a value skipped)."""
    with_value = {"--wheel-dir", "-w", "--find-links", "-f", "--index-url", "-i"}
    arguments, skip = [], False
    for word in words[2:]:
        if skip:
            skip = False
        elif word in with_value:
            skip = True
        elif not word.startswith("-"):
            arguments.append(word)
    return arguments


IMAGES = [read_image(path) for path in _images()]
IDS = [image.key for image in IMAGES]


def test_there_is_an_image_per_service_and_a_gpu_actuator_image() -> None:
    services = {p.parent.name for p in (REPO / "services").glob("*/pyproject.toml")}

    assert {image.key for image in IMAGES} == {
        *(f"services/{name}/Dockerfile" for name in services),
        "services/actuator/Dockerfile.gpu",
    }


def test_every_repository_package_name_is_caught_by_the_images_guard() -> None:
    """The images refuse any wheel named `discospace*` that was not built from the copies."""
    assert all(name.startswith("discospace") for name in repository_packages())


@pytest.mark.parametrize("image", IMAGES, ids=IDS)
def test_the_image_copies_exactly_the_repository_packages_its_service_needs(image: Image) -> None:
    packages = repository_packages()
    needed = closure(_service_of(image), _extras_of(image), packages)

    assert sorted(image.copied) == sorted(packages[name].folder for name in needed)


@pytest.mark.parametrize("image", IMAGES, ids=IDS)
def test_the_image_builds_every_copied_package_from_its_folder_without_an_index(
    image: Image,
) -> None:
    [build] = [words for words in image.pip_commands("wheel") if "--no-deps" in words]

    assert _option_values(build, "--wheel-dir") == [f"{WHEELS}/repo"]
    assert sorted(_arguments(build)) == sorted(image.copied)


@pytest.mark.parametrize("image", IMAGES, ids=IDS)
def test_the_image_names_every_built_package_by_its_wheel_when_fetching_dependencies(
    image: Image,
) -> None:
    [fetch] = [words for words in image.pip_commands("wheel") if "--no-deps" not in words]
    service = _service_of(image)
    extras = _extras_of(image)
    named = f"{service}[{','.join(sorted(extras))}]" if extras else None

    assert _option_values(fetch, "--wheel-dir") == [f"{WHEELS}/deps"]
    assert sorted(_arguments(fetch)) == sorted([f"{WHEELS}/repo/*.whl", *filter(None, [named])])


@pytest.mark.parametrize("image", IMAGES, ids=IDS)
def test_the_image_installs_its_service_from_the_built_wheels_only(image: Image) -> None:
    [install] = image.pip_commands("install")
    extras = _extras_of(image)
    wanted = _service_of(image) + (f"[{','.join(sorted(extras))}]" if extras else "")

    assert "--no-index" in install
    assert sorted(_option_values(install, "--find-links")) == [f"{WHEELS}/deps", f"{WHEELS}/repo"]
    assert _arguments(install) == [wanted]


@pytest.mark.parametrize("image", IMAGES, ids=IDS)
def test_the_build_context_lets_every_copied_folder_in(image: Image) -> None:
    ignore = image.path.with_name(image.path.name + ".dockerignore").read_text().splitlines()

    for folder in image.copied:
        assert f"!{folder.split('/')[0]}/" in ignore, folder


# ---- The Dockerfiles' pip commands, run against a stand-in index -------------------------


def _write_wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    """A minimal pure-Python wheel whose metadata names `requires`."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{dist}_stand_in/__init__.py": f"ORIGIN = {str(folder)!r}\n",
        f"{info}/METADATA": "\n".join(
            ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
            + [f"Requires-Dist: {line}" for line in requires]
            + [f"Provides-Extra: {e}" for e in sorted({_extra(line) for line in requires} - {""})]
        )
        + "\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path, "w") as wheel:
        for member, content in files.items():
            wheel.writestr(member, content)
            digest = hashlib.sha256(content.encode()).digest()
            encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            record.append(f"{member},sha256={encoded},{len(content)}")
        wheel.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return path


def _extra(line: str) -> str:
    match = re.search(r'extra == "([^"]+)"', line)
    return match[1] if match else ""


def _name_with_extras(requirement: Requirement) -> str:
    extras = ",".join(sorted(requirement.extras))
    return f"{requirement.name}[{extras}]" if extras else requirement.name


def _builds(run: str) -> bool:
    return run.startswith("pip wheel") and "--no-deps" in shlex.split(run)


def _stand_in_requires(package: Package, repository: dict[str, Package]) -> list[str]:
    """The package's dependencies among the repository's (third-party ones left out), with
    one third-party stand-in per extra, so that extras must resolve too."""
    lines = [str(r) for r in package.requires if canonicalize_name(r.name) in repository]
    for extra, requirements in package.extras.items():
        lines += [
            f'{_name_with_extras(r)}; extra == "{extra}"'
            for r in requirements
            if canonicalize_name(r.name) in repository
        ]
        lines.append(f'third-party-for-{extra}; extra == "{extra}"')
    return lines


def _stand_in_index(root: Path, names: list[str]) -> str:
    """A PEP 503 index: every repository package at a higher version, and the extras' stand-in."""
    for name in names:
        folder = root / name
        wheel = _write_wheel(folder, name, STAND_IN_INDEX_VERSION, [])
        (folder / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')
    return (root).as_uri()


def _pip_shim(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "pip"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m pip "$@"\n')
    shim.chmod(0o755)
    return folder


@dataclass
class Build:
    """The image's wheel stage after its --no-deps build, and its install, run here."""

    image: Image
    root: Path
    index: str

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PATH": f"{_pip_shim(self.root / 'shim')}{os.pathsep}{os.environ['PATH']}",
            "PIP_INDEX_URL": self.index,
            "PIP_NO_CACHE_DIR": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1",
        }

    def local(self, command: str) -> str:
        return command.replace(f"{WHEELS}/", f"{self.root}/wheels/")

    def fetch_dependencies(self) -> subprocess.CompletedProcess[str]:
        """The wheel stage's RUN lines after the one that builds the copies."""
        [(stage, build)] = [
            (stage, i) for stage in self.image.stages for i, run in enumerate(stage) if _builds(run)
        ]
        after_build = stage[build + 1 :]
        return subprocess.run(
            ["sh", "-ec", self.local(" ; ".join(after_build))],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def install_report(self) -> dict[str, str]:
        """Name -> version that the final stage's pip install would install."""
        [install] = self.image.pip_commands("install")
        report = self.root / "report.json"
        command = [*install, "--dry-run", "--ignore-installed", "--quiet", "--report", str(report)]
        result = subprocess.run(
            ["sh", "-ec", self.local(shlex.join(command))],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        chosen = json.loads(report.read_text())["install"]
        return {
            canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
            for item in chosen
        }


def _build(image: Image, root: Path, leave_out: str | None = None) -> Build:
    repository = repository_packages()
    needed = closure(_service_of(image), _extras_of(image), repository)
    for name in sorted(needed - {leave_out}):
        package = repository[name]
        _write_wheel(
            root / "wheels" / "repo",
            package.name,
            package.version,
            _stand_in_requires(package, repository),
        )
    third_party = [f"third-party-for-{e}" for p in repository.values() for e in p.extras]
    index = _stand_in_index(root / "index", sorted(repository) + sorted(set(third_party)))
    return Build(image, root, index)


@pytest.mark.parametrize("image", IMAGES, ids=IDS)
def test_the_image_takes_every_repository_package_from_its_own_wheel_never_from_an_index(
    image: Image, tmp_path: Path
) -> None:
    build = _build(image, tmp_path)
    repository = repository_packages()

    fetched = build.fetch_dependencies()
    installed = build.install_report()

    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    needed = closure(_service_of(image), _extras_of(image), repository)
    assert {name: installed[name] for name in needed} == {
        name: repository[name].version for name in needed
    }
    assert set(installed) - needed <= {f"third-party-for-{e}" for e in _extras_of(image)}


@pytest.mark.parametrize("image", IMAGES, ids=IDS)
def test_the_image_refuses_to_build_when_a_needed_repository_package_was_not_copied(
    image: Image, tmp_path: Path
) -> None:
    build = _build(image, tmp_path, leave_out="discospace-core")

    fetched = build.fetch_dependencies()

    assert fetched.returncode != 0
    assert "a repository package came from an index" in fetched.stderr
