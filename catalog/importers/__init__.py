"""Importers of the collection: plain functions that read a file and write taxa and images, all or nothing.

Each raises common.inputs.InputError (one line: file, place, problem) and leaves the
database unchanged when the file cannot be imported.
"""

from common.inputs import InputError

from .folder import import_folder
from .inat import import_inat

__all__ = ["InputError", "import_folder", "import_inat"]
