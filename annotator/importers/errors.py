class ImportFailed(Exception):
    """A file cannot be imported. Its text is one line: the file, the place in it, and what to fix.

    Importers raise it before or inside their transaction, so the database is
    left exactly as it was.
    """

    def __init__(self, path, where: str | None, problem: str):
        self.path = str(path)
        self.where = where
        self.problem = problem
        place = f"{self.path}, {where}" if where else self.path
        super().__init__(f"{place}: {problem}")
