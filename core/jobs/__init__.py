"""The job machinery: tracked jobs on one loop (registry), job processes (host) and polite remote calls (remote).
Above the store, which records the jobs; below every capability package, whose long work runs here."""
