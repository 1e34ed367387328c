"""`kforge suite`: many problems at once. Find them (discover.py), optimize or judge each in a process of its
own (task.py), on a local pool or a Ray cluster (runner.py), keep one row per problem as it finishes
(results.py: results.jsonl, summary.json), and draw the report (report.py: report.md, report.html)."""
