"""The offline demo: the project it builds, its report, and the guided tour of the papers' findings."""
