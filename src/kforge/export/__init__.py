"""Exporting a run's best kernel so it works in a user's own code: the solution file, the extensions built for
this machine beside it (so its first import loads them instead of compiling), and the run's record."""
