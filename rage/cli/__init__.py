"""The command-line layer: click commands that parse, call the core and render. No logic."""
