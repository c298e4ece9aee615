"""Reports over finished runs: the paper's tables (`adaptsim table`) and learning curves (`adaptsim plot`).

- `runs`: find run directories under sweep or run directories, load them, list what failed or is missing.
- `compare`: which runs may be compared (blocks per data set, one model), row labels, the baseline.
- `table`, `plot`: the two commands.

Reports never translate anything: the baseline is the sweep's `method=none` run, read from disk.
"""
