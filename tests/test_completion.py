"""`gpulab completion`: the scripts come out, and the bash one completes in a real bash."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gpulab.cli import main

pytest.importorskip("shtab")  # a dependency; this names the cause if an install lacks it


def _script(capsys, shell: str) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def _complete(script: str, words: list[str], tmp_path) -> list[str]:
    """Source the script in bash, set COMP_WORDS/COMP_CWORD as bash would for `words` (the last
    one being typed), call the function `complete -p gpulab` names, print COMPREPLY."""
    path = tmp_path / "gpulab.bash"
    path.write_text(script)
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    probe = f"""
set -e
source '{path}'
func=$(complete -p gpulab | sed -E 's/.*-F ([^ ]+).*/\\1/')
COMP_WORDS=({quoted})
COMP_CWORD={len(words) - 1}
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
"$func" gpulab "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return sorted(w.strip() for w in out.stdout.splitlines() if w.strip())


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this machine")
def test_bash_completes_subcommands_and_options(capsys, tmp_path):
    script = _script(capsys, "bash")
    assert script.startswith("#") and "complete " in script
    every = _complete(script, ["gpulab", ""], tmp_path)
    for command in ("info", "list", "run", "bench", "doctor", "completion", "ex"):
        assert command in every
    assert _complete(script, ["gpulab", "do"], tmp_path) == ["doctor"]
    assert _complete(script, ["gpulab", "doctor", "--j"], tmp_path) == ["--json"]
    assert _complete(script, ["gpulab", "completion", "f"], tmp_path) == ["fish"]
    assert _complete(script, ["gpulab", "ex", "h"], tmp_path) == ["hint"]


@pytest.mark.parametrize(("shell", "words"), [("zsh", "#compdef gpulab"), ("fish", "complete")])
def test_zsh_and_fish_scripts(capsys, shell, words):
    script = _script(capsys, shell)
    assert words in script and "doctor" in script


def test_an_unknown_shell_is_exit_2_and_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["completion", "tcsh"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "invalid choice" in err and err.count("\n") == 1
