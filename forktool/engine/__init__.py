"""One module per capability. Engines return result objects; they never print or exit."""

from collections.abc import Callable

# Called with the number of steps just done; the CLI turns it into a progress bar.
Progress = Callable[[int], None]
