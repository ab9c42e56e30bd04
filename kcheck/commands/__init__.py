"""The commands: one module per command or command group, each parsing its options (kcheck.options holds the
shared ones) into a part's settings, calling the part and rendering what it returns. No command module imports
another; kcheck.cli registers them all on the Typer app."""
