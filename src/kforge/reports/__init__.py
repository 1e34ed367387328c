"""What a run looks like to a person: tables and lines for the terminal (rich), the staged pipeline's trial tree,
and the JSON record an export writes. Reads the store only; the CLI prints what it returns."""

from kforge.reports.tables import (
    attempts_table,
    best_line,
    confirmation_of,
    costs_line,
    run_record,
    run_summary,
    runs_table,
    stored_best_line,
)
from kforge.reports.trial_tree import stage_gains, trial_tree

__all__ = ["attempts_table", "best_line", "confirmation_of", "costs_line", "run_record", "run_summary",
           "runs_table", "stage_gains", "stored_best_line", "trial_tree"]
