"""The `spokenbench` command: argument parsing, one module per command family, printing and exit codes; it calls
core's public functions only."""
