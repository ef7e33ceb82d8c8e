"""Importers: plain functions that read a file and write the catalog, all or nothing.

Each raises ImportFailed (one line: file, place, problem) and leaves the
database unchanged when the file cannot be imported.
"""
from .errors import ImportFailed
from .folder import import_folder
from .inat import import_inat
from .inquire import import_annotations, import_queries

__all__ = ["ImportFailed", "import_annotations", "import_folder", "import_inat", "import_queries"]
