"""Finding a course notebook's cells by what they are, not by their position (shared by the answer tests).

Every lesson, solution and exercise starts with the course's setup cell (installs coursekit where it
is missing, picks the device); the notebook's own imports are the first code cell after it.
"""
from coursekit.course.authoring.setup_cell import is_setup_cell


def imports_cell(nb):
    """The notebook's first code cell that is not the setup cell: its imports and sizes."""
    return next(cell for cell in nb.cells if cell.cell_type == "code" and not is_setup_cell(cell))
