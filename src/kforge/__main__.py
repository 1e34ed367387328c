from kforge.cli import app

app(prog_name="kforge")
