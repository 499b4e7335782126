"""The metrics tests import their table helpers from metrics_helpers.py (on pytest.ini's pythonpath)."""
