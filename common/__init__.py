"""Plumbing every app shares and that belongs to none: command-line errors and progress bars (cli), safe
file writes (files), reading people's files (inputs), image formats (formats), the API's parameters,
pagination and JSON limits (api_params), and the background-job path (background).

common imports no Quire app (tests/test_architecture.py), so any app may import it.
"""
