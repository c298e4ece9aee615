"""Reports over finished runs, one module per command a user types: `table`, `plot`, `findings`, `compare`, `cxmi`,
`litter`, `terms`, `forgetting` (each its parser, main, analyse and render). What they compute is in adaptsim/metrics/;
what they share is here:

- `runs`: find run directories under sweep or run directories, load them, list what failed or is missing.
- `blocks`: which runs may be compared (blocks per data set, one model), row labels, the baseline, and which runs
  may be joined with it token by token (CXMI).
- `significance` (over `stats`): read steps.jsonl, pair runs, intervals and tests; the options every report shares.
- `match_bands` (`table --bands-by-match`), `resources` (LitTER's and terms' dictionaries and presets), `notes` (what
  a reader must know about a run), `markdown` (a table's head), `figures` (--out, line styles).
- `paper` (the paper's Table 5 effect sizes) and `power` (`findings --effects/--power`: effect sizes beside the
  paper's, and the documents a stream would need to show them).

Reports never translate anything: the baseline is the sweep's `method=none` run, read from disk.
"""
