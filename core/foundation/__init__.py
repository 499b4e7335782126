"""What every layer uses and that depends on nothing above it: user-facing errors, files, tables and JSON from
others read within bounds, standard streams, the progress/cancel interface, whose leftovers are whose (processes),
credentials, optional backends, pinned model files."""
