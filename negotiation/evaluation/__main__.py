"""``python -m negotiation.evaluation evaluate|serve-standin ...`` (the same commands ``nego`` mounts)."""

import typer

from negotiation.evaluation._cli import evaluate, serve_standin

app = typer.Typer(add_completion=False, no_args_is_help=True)
app.command("evaluate")(evaluate)
app.command("serve-standin")(serve_standin)

if __name__ == "__main__":
    app()
