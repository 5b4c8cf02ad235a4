"""Finding what is wrong, fast (issue #31): problem views on the executions list (status
counts, one-click views, saved views, export, the search as code), "why is it stuck?" on
a running execution, a run grid per definition and a human-task inbox."""
