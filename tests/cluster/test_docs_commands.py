"""Every command block of README.md and docs/*.md that renders or submits a job, run as a reader
copies it (tests/helpers/box_docs.py): `python -m jobs` renders it (exit 0), or refuses it at
render time (exit 2) with the reason the docs say; the JobSet it writes is admitted by the
stack's Kueue and every pod placed on the stack's nodes (tests/helpers/box_cluster.py); a team's
job runs in the box, its script a stand-in of the team's image that records the arguments it got.

What the runner changes of a documented command: `--apply` is left out (no cluster: the box runs
the job instead of kubectl), `--out` points at the test's folder, and a recipe renders with
`--render-only`: its image and staged weights are the precondition the docs set before these
commands (docs/training.md, "Staging weights"), and the recipes' processes are
tests/image/recipes'."""

from __future__ import annotations

import contextlib

import pytest

from tests.helpers.box_cluster import outcome_text
from tests.helpers.box_docs import doc_commands
from tests.helpers.box_stacks import ARGS_RECORDER, box, recorded_args, submitted, team_image

COMMANDS = doc_commands()


def test_the_docs_show_job_commands_to_run():
    # docs/training.md: the team's job and the recipes' four commands at least.
    kinds = [c.kind for c in COMMANDS]
    assert kinds.count("submit") >= 1 and kinds.count("recipe") >= 4, [str(c) for c in COMMANDS]


def test_the_runner_reads_continued_lines_placeholders_and_refused_markers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```sh\n"
        ".venv/bin/python -m jobs submit --stack dev --nodes 1 \\\n"
        "  --image r/x@sha256:<64 hex> -- t.py  # a comment\n"
        "python -m jobs recipe esrgan --stack prod --nodes 9  # refused: no pool holds\n"
        "make plan\n"
        "```\n"
    )
    submit, recipe = doc_commands([page])
    assert (submit.line, submit.refused) == (2, None)
    assert submit.words == (
        "submit", "--stack", "dev", "--nodes", "1", "--image", "r/x@sha256:" + "0" * 64, "--",
        "t.py",
    )  # fmt: skip
    assert (recipe.line, recipe.kind, recipe.refused) == (4, "recipe", "no pool holds")
    page.write_text("```sh\npython -m jobs submit --stack <stack> --nodes 1\n```\n")
    with pytest.raises(AssertionError, match="<stack>"):
        doc_commands([page])


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    with contextlib.ExitStack() as stack:
        made = {}

        def get(name: str):
            if name not in made:
                folder = tmp_path_factory.mktemp(f"box-{name}")
                made[name] = stack.enter_context(box(name, folder))[0]
            return made[name]

        yield get


@pytest.mark.parametrize("command", [pytest.param(c, id=c.where) for c in COMMANDS])
def test_every_documented_job_command_renders_and_runs_or_is_refused_at_render_time(
    command, clusters, tmp_path, capsys
):
    words = [w for w in command.words if w != "--apply"]
    if command.kind == "recipe":
        words.insert(2, "--render-only")
    code, jobset = submitted(words, tmp_path / "out")
    err = capsys.readouterr().err
    if command.refused:
        assert (code, command.refused in err) == (2, True), f"{command}: exit {code}: {err}"
        return
    assert code == 0 and jobset, f"{command}: python -m jobs exited {code}:\n{err}"
    stack = command.words[command.words.index("--stack") + 1]
    cluster = clusters(stack)
    assert cluster.bind_all(jobset), f"{command}: no pod placed"
    if command.kind != "submit":
        return
    # The team's image, stood in for: the documented script in its working folder.
    team = tmp_path / "team"
    team.mkdir()
    script_args = list(command.words[command.words.index("--") + 1 :])
    scripts = [w for w in script_args if w.endswith((".py", ".sh"))]
    for script in scripts:
        (team / script).write_text(ARGS_RECORDER)
    team_image(cluster, jobset, team, on_bootstrap=False)
    outcome = cluster.run_jobset(jobset)
    assert outcome.state == "Completed", f"{command}:\n{outcome_text(outcome)}"
    # Every rank ran the documented script with the documented arguments.
    seen = recorded_args(outcome.attempts[-1])
    after = script_args[script_args.index(scripts[0]) + 1 :]
    assert seen and all(s == {"script": scripts[0], "args": after} for s in seen), seen
