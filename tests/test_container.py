"""The Containerfile, checked without a container engine: its shape (multi-stage, non-root, the
data volume, healthcheck, `frontdesk serve`), its build commands run by hand where they can run
here, and the wheel it installs carrying widget.js and the sample site."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
CONTAINERFILE = ROOT / "Containerfile"
MODEL_CACHE = Path.home() / ".cache" / "frontdesk-tests"


@dataclass
class Stage:
    base: str
    name: str = ""
    steps: list[tuple[str, str]] = field(default_factory=list)

    def all(self, instruction: str) -> list[str]:
        return [args for name, args in self.steps if name == instruction]

    def last(self, instruction: str) -> str:
        found = self.all(instruction)
        assert found, f"stage {self.name or self.base} has no {instruction}"
        return found[-1]


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Containerfile → global ARG defaults and stages of (INSTRUCTION, arguments)."""
    lines, current = [], ""
    for raw in text.splitlines():
        if not current and raw.lstrip().startswith("#"):
            continue
        if raw.rstrip().endswith("\\"):
            current += raw.rstrip()[:-1] + " "
            continue
        current += raw
        if current.strip():
            lines.append(current.strip())
        current = ""
    assert not current, "the file ends inside a continued line"
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in lines:
        instruction, _, rest = line.partition(" ")
        instruction = instruction.upper()
        assert instruction in {"FROM", "ARG", "ENV", "RUN", "COPY", "WORKDIR", "USER", "VOLUME", "EXPOSE",
                               "HEALTHCHECK", "CMD", "LABEL", "ENTRYPOINT", "ADD", "SHELL", "STOPSIGNAL"}, line
        if instruction == "FROM":
            words = rest.split()
            base = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), words[0])
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else ""
            stages.append(Stage(base=base, name=name))
        elif not stages and instruction == "ARG":
            key, _, default = rest.partition("=")
            args[key.strip()] = default.strip()
        else:
            assert stages, f"{instruction} before the first FROM"
            stages[-1].steps.append((instruction, rest.strip()))
    return args, stages


def env_of(stage: Stage) -> dict[str, str]:
    env: dict[str, str] = {}
    for args in stage.all("ENV"):
        for word in shlex.split(args):
            key, _, value = word.partition("=")
            env[key] = value
    return env


@pytest.fixture(scope="module")
def containerfile() -> tuple[dict[str, str], list[Stage]]:
    return parse(CONTAINERFILE.read_text())


def test_multi_stage_from_slim_python(containerfile):
    args, stages = containerfile
    assert len(stages) >= 2
    build, final = stages[0], stages[-1]
    assert build.name and build.base.startswith("python:3.11-slim")
    assert final.base.startswith("python:3.11-slim") and not final.name
    # The final stage only copies the built virtualenv: no compilers, no pip install there.
    assert any(f"--from={build.name}" in c for c in final.all("COPY"))
    assert not any("pip install" in r for r in final.all("RUN"))
    assert all(not c.startswith("--from") or f"--from={build.name}" in c for c in final.all("COPY"))


def test_runs_frontdesk_serve_as_a_non_root_user_with_data_in_a_volume(containerfile):
    _, stages = containerfile
    final = stages[-1]
    user = final.last("USER").split(":")[0]
    assert user not in ("root", "0") and (not user.isdigit() or int(user) >= 1000)
    # USER comes after every RUN of the final stage (they need root to create the user).
    names = [name for name, _ in final.steps]
    assert max(i for i, n in enumerate(names) if n == "RUN") < names.index("USER")
    assert json.loads(final.last("VOLUME")) == ["/data"]
    env = env_of(final)
    assert env["FRONTDESK_DATA_DIR"] == "/data" and env["FRONTDESK_HOST"] == "0.0.0.0"
    assert final.last("EXPOSE") == env.get("FRONTDESK_PORT", "8000") == "8000"
    assert json.loads(final.last("CMD")) == ["frontdesk", "serve"]
    assert "/opt/frontdesk/bin" in env["PATH"].split(":")
    # The data dir belongs to the user that writes it.
    assert any(f"chown {final.last('USER')} /data" in run for run in final.all("RUN"))


def test_healthcheck_asks_healthz_with_the_standard_library(containerfile):
    _, stages = containerfile
    check = stages[-1].last("HEALTHCHECK")
    options, _, command = check.partition("CMD ")
    for option in ("--interval=", "--timeout=", "--start-period=", "--retries="):
        assert option in options
    argv = json.loads(command)
    assert argv[:2] == ["python", "-c"] and "/healthz" in argv[2] and "urllib.request" in argv[2]
    compile(argv[2], "<healthcheck>", "exec")


def test_build_commands_list_the_dependencies_and_make_the_model_where_the_server_looks(
        containerfile, tmp_path):
    _, stages = containerfile
    build, final = stages[0], stages[-1]
    runs = " && ".join(build.all("RUN"))

    # The requirements one-liner prints exactly pyproject's dependencies.
    requirements = re.search(r'python -c "(import tomllib.*?)" >', runs).group(1)
    listed = subprocess.run([sys.executable, "-c", requirements],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("\n")
    import tomllib

    assert [line for line in listed if line] == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]

    # The int8 model is made, inside the image, in the cache the server's settings point at.
    env = env_of(final)
    made = re.search(r"cache_dir=Path\('([^']+)'\)", runs).group(1)
    assert Path(made) == Settings(data_dir=env["FRONTDESK_DATA_DIR"],
                                  model_cache_dir=env["FRONTDESK_MODEL_CACHE_DIR"]).model_cache
    assert not made.startswith(env["FRONTDESK_DATA_DIR"])  # not in the volume: the image carries it
    checked = re.search(r"test -s (\S+)", runs).group(1)
    assert checked.startswith(made + "/")

    # Run that one-liner here with the test session's model cache in place of the image's: it
    # must find the existing int8 copy (no re-quantising) and embed with it.
    MODEL_CACHE.mkdir(parents=True, exist_ok=True)
    one_liner = re.search(r'python -c "(from pathlib import Path; from ingest\.embed.*?)"', runs).group(1)
    one_liner = one_liner.replace(f"'{made}'", repr(str(MODEL_CACHE)))
    clean_env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); " + one_liner, str(ROOT)],
                   cwd=tmp_path, env=clean_env, check=True, timeout=300)
    assert Path(checked.replace(made, str(MODEL_CACHE), 1)).stat().st_size > 1_000_000


def test_containerignore_keeps_what_the_build_copies(containerfile):
    _, stages = containerfile
    ignored = [line.strip() for line in (ROOT / ".containerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    copied = [part for c in stages[0].all("COPY") for part in c.split()[:-1] if not part.startswith("--")]
    assert copied
    for path in copied:
        assert (ROOT / path).exists(), path
        assert path not in ignored and path.split("/")[0] not in ignored, path
    for must in (".venv", "data", ".git", "*.egg-info"):
        assert must in ignored


def _build(source: Path, out: Path) -> list[str]:
    """The project as the image installs it: a wheel (`pip wheel`) when setuptools can make one
    here, else setuptools' build_py, which copies exactly the wheel's packages and package data.
    Returns the files' paths inside the distribution."""
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    can_wheel = subprocess.run([sys.executable, "-c", "import setuptools.command.bdist_wheel"],
                               capture_output=True).returncode == 0 or \
        subprocess.run([sys.executable, "-c", "import wheel"], capture_output=True).returncode == 0
    if can_wheel:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(out), "."], cwd=source, env=env, check=True, capture_output=True, timeout=300)
        wheel = next(out.glob("frontdesk-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
        entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        with zipfile.ZipFile(wheel) as archive:
            assert "frontdesk = app.__main__:main" in archive.read(entry).decode()
        return names
    subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
                    "--build-lib", str(out / "lib")], cwd=source, env=env, check=True, capture_output=True,
                   timeout=300)
    return [str(p.relative_to(out / "lib")) for p in (out / "lib").rglob("*") if p.is_file()]


@pytest.mark.slow
def test_the_installed_package_carries_the_widget_and_the_sample_site(containerfile, tmp_path):
    _, stages = containerfile
    source = tmp_path / "src"
    source.mkdir()
    # Exactly what the build stage copies into its context, nothing else.
    for c in stages[0].all("COPY"):
        for part in c.split()[:-1]:
            if part.startswith("--"):
                continue
            if (ROOT / part).is_dir():
                shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(ROOT / part, source / part)
    names = set(_build(source, tmp_path / "out"))
    assert "widget/widget.js" in names and "widget/demo.html" in names
    site = ROOT / "app" / "demo" / "site"
    expected = {f"app/demo/site/{p.relative_to(site).as_posix()}" for p in site.rglob("*") if p.is_file()}
    assert len(expected) >= 29 and expected <= names, sorted(expected - names)
    # Every Python package of the project is in it (setuptools' package list is explicit).
    for package in ("app", "ingest", "store", "widget"):
        for init in (ROOT / package).rglob("__init__.py"):
            if "__pycache__" not in init.parts:
                assert init.relative_to(ROOT).as_posix() in names, init
    for module in ("app/__main__.py", "app/routes/widget.py", "app/demo/server.py", "ingest/embed.py"):
        assert module in names
