"""The command-line scripts as a user runs them (issue 12): option order, bad choices, pipes, duplicates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import make_sessions
import orjson
import pytest
import replay_check
import summary
from mitmproxy import hooks, io
from mitmproxy.test import taddons, tflow
from native_bridge.chat_hop.addon import ChatHop
from native_bridge.records import writer as records

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"

SESSION = (ROOT / "tests" / "fixtures" / "sessions" / "chat_session.json").read_bytes()


@pytest.mark.parametrize(
    "argv, kinds, tools",
    [
        (["--kinds", "run_command", "recs/"], ["run_command"], []),
        (
            ["--kinds", "run_command,view_file", "--tools", "my_exec=run_command", "recs/"],
            ["run_command", "view_file"],
            ["my_exec=run_command"],
        ),
        (["--kinds", "run_command", "--kinds", "find", "recs/", "-q"], ["run_command", "find"], []),
        (["recs/", "--tools", "Bash=", "--tools", "a=find,b=view_file"], [], ["Bash=", "a=find", "b=view_file"]),
    ],
)  # fmt: skip
def test_options_before_the_sources_do_not_swallow_them(argv, kinds, tools) -> None:
    p = replay_check.parser()
    args = p.parse_args(argv)
    assert args.sources == ["recs/"]
    assert replay_check._split(args.kinds) == kinds and replay_check._split(args.tools) == tools
    config = replay_check.config_from(args, p)
    assert config.kinds == (frozenset(kinds) if kinds else frozenset(replay_check.KINDS))


@pytest.mark.parametrize("argv", [["--kinds", "nope", "recs/"], ["recs/", "--kinds", "run_command,nope"]])
def test_an_unknown_kind_is_refused_with_a_clear_error(argv, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        replay_check.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--kinds: unknown 'nope' (choose from view_file, run_command" in err


def test_a_bad_tool_mapping_is_refused_with_a_clear_error(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        replay_check.main(["--tools", "x=nope", "recs/"])
    assert exit_.value.code == 2 and "--tools:" in capsys.readouterr().err


def _capture(tmp_path: Path, n: int = 3) -> tuple[Path, Path]:
    """Records and a -w flow file of the same flows, as the README's walkthrough makes them."""
    hop = ChatHop()
    flows = []
    with taddons.context(hop) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_mode="rewrite", bridge_records=str(tmp_path / "records"))
        for i in range(n):
            f = tflow.tflow()
            f.request.method, f.request.path = "POST", "/v1/chat/completions"
            f.request.headers["content-type"] = "application/json"
            f.request.headers["x-session-id"] = f"s{i}"
            f.request.content = SESSION
            hop.request(f)
            flows.append(f)
        assert hop.recorder.flush(10)
        hop.done()
    capture = tmp_path / "capture.flows"
    with capture.open("wb") as fo:
        w = io.FlowWriter(fo)
        for f in flows:
            w.add(f)
    return tmp_path / "records", capture


def test_summary_counts_each_flow_once_from_records_and_their_capture(tmp_path, capsys) -> None:
    recs, capture = _capture(tmp_path)
    assert summary.main([str(recs), str(capture)]) == 0
    out = capsys.readouterr().out
    assert "3 requests, 3 rewritten" in out
    assert replay_check.main([str(recs), str(capture), "-q"]) == 0
    assert "3 checked" in capsys.readouterr().out


def test_the_bundled_sessions_are_what_their_scripts_write(capsys) -> None:
    """tests/fixtures/sessions/*_session.json, regenerated, are byte for byte the bundled files."""
    assert make_sessions.main(["--check"]) == 0, capsys.readouterr().out
    assert capsys.readouterr().out.count("as its script writes it") == 3


def test_the_fuzzer_runs_as_its_readme_command_says() -> None:
    """``.venv/bin/python scripts/fuzz ...`` (tests/README.md): the package's folder, run as a script."""
    proc = subprocess.run(
        [sys.executable, "scripts/fuzz", "--cases", "20", "--workers", "1", "--seed", "7"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("fuzz: 20 cases (5 also through the addon)") and "failures:  0" in proc.stdout


def test_the_bench_runs_as_its_readme_command_says() -> None:
    """``.venv/bin/python scripts/bench ...`` (scripts/BENCH.md): the package's folder, run as a script."""
    proc = subprocess.run(
        [sys.executable, "scripts/bench", "--quick", "--only", "golden"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("golden: fast paths against reference paths"), proc.stdout
    assert "PASS  output identical to the reference paths" in proc.stdout


# The planner-hop scripts, still being written by another change: to move to cli.run when it lands.
NOT_YET = {"fake_language_server.py", "interop.py", "real_gateway.py"}


def test_every_script_ends_through_cli_run() -> None:
    """cli.run ends a script quietly when its reader goes away (| head)."""
    for path in sorted([*SCRIPTS.glob("*.py"), *SCRIPTS.glob("*/__main__.py")]):
        if path.name in NOT_YET:
            continue
        text = path.read_text()
        if 'if __name__ == "__main__":' in text:
            assert "cli.run(main)" in text, f"{path.name}: use cli.run(main) at its entry point"


def _many_records(directory: Path, n: int) -> None:
    directory.mkdir()
    for i in range(n):
        job = records.RecordJob(
            f"flow-{i:05d}", 1.7e9 + i, "POST", "http://h/v1/chat/completions", [], "unchanged", "no tool history",
            "chat", orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
        )  # fmt: skip
        (directory / records.record_name(job)).write_bytes(records._render(job))


@pytest.mark.parametrize("script", ["summary.py", "replay_check.py"])
def test_piping_to_head_prints_no_traceback(tmp_path, script) -> None:
    _many_records(tmp_path / "records", 1500)  # far more output than a pipe holds
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / script), str(tmp_path / "records")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # what head does after its first line
    err = proc.stderr.read().decode()
    proc.wait(60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_a_stub_release_of_the_day_is_named_not_installed(tmp_path, monkeypatch, capsys) -> None:
    """interop.py --latest: a newest release known to be a stub (kimi-cli 1.52.0 only prints that the
    package is no longer maintained) is not installed and not run; the manifest, the versions table
    and the skip say which release and why, and it does not count as an install that failed."""
    import interop

    monkeypatch.setattr(interop, "CACHE", tmp_path)
    monkeypatch.setattr(interop, "pypi_latest_version", lambda package: "1.52.0")
    manifest: dict[str, object] = {}
    assert interop.install_python_clients(manifest, latest=True, names=["kimi-cli"]) == 0
    entry = manifest["kimi-cli"]
    assert isinstance(entry, dict) and entry["version"] == "1.52.0" and "bin" not in entry and "error" not in entry
    assert "no longer maintained" in entry["stub"]
    assert not (tmp_path / "py-kimi-cli-1.52.0").exists()
    assert "kimi-cli 1.52.0: a stub release, not run:" in capsys.readouterr().out
    line = next(x for x in interop.pins_vs_latest(manifest) if x.startswith("kimi-cli"))  # type: ignore[arg-type]
    assert line.split()[1:4] == ["1.51.0", "1.52.0", "stub"], line


def test_a_release_whose_packages_are_not_published_says_which() -> None:
    """kilo 7.8.1 on npm: its launcher installs, the platform packages it requires at that version are
    not published; the install error names them, not the tail of npm's log."""
    import interop

    stderr = (
        "npm error npm error code ETARGET\n"
        "npm error npm error notarget No matching version found for @kilocode/cli-linux-x64-baseline@7.8.1.\n"
        "npm error npm error notarget In most cases you or one of your dependencies are requesting a package"
        " version that doesn't exist.\n"
        "npm error npm error notarget No matching version found for @kilocode/cli-linux-x64-musl@7.8.1.\n"
        "npm error npm error notarget No matching version found for @kilocode/cli-linux-x64-baseline@7.8.1.\n"
        "npm error Failed to setup kilo binary: It seems your package manager failed to install the right"
        " Kilo CLI package.\n"
    )
    assert interop.npm_error(1, stderr) == (
        "npm install failed (exit 1): not published: @kilocode/cli-linux-x64-baseline@7.8.1,"
        " @kilocode/cli-linux-x64-musl@7.8.1"
    )
    assert interop.npm_error(1, "npm error code E403\nnpm error 403 Forbidden").startswith(
        "npm install failed (exit 1): npm error code E403"
    )
