"""The commands that run work (`adaptsim run|bench|select-fixed|train|score|data-stats|convert`), one module each,
dispatched by adaptsim/cli.py. Each is a thin wrapper: it reads its arguments (Hydra's, or argparse's) and calls the
engine (session, simulate, lockstep, methods, metrics); the reports (`table`, `plot`, `findings`, `compare`) are in
adaptsim/report."""
