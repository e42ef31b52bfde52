"""python -m jobs <command>

  submit --stack S [--team T] --nodes N --image REF@sha256:... -- COMMAND...
                         a team's image and command as a distributed job (jobs/team.py)
  recipe <recipe> --stack S [--team T] --nodes N
                         a training recipe's job: prepare, sd-finetune, esrgan (jobs/recipe.py)
  status [NAME] --stack S [--team T]
                         a submitted job's state, restarts, goodput, checkpoint and priced
                         badput by cause; without NAME, the team's (jobs/status.py)
  usage --stack S --month YYYY-MM [--team T] [--format csv|table]
                         each team's GPU-hours and cost in a month, a finance export (jobs/usage.py)

submit and recipe render the job to a file, or submit it with --apply. A job of the same name
that exists is described and left as it is (exit 3) unless --resume replaces a failed or
finished one, which resumes from its checkpoint. `<command> --help` lists the flags.
Run from the repository root with the program's venv (.venv)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "submit":
        from jobs.team import main as submit

        return submit(rest)
    if command == "recipe":
        from jobs.recipe import main as recipe

        return recipe(rest)
    if command == "status":
        from jobs.status import main as status

        return status(rest)
    if command == "usage":
        from jobs.usage import main as usage

        return usage(rest)
    print(
        f"error: unknown command {command!r}; one of submit, recipe, status, usage",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
