"""The commands that run work (`adaptsim run|bench|select-fixed|serve|train|convert|score|data-stats`), one module each
(`select-fixed` is select_fixed.py), dispatched by adaptsim/cli.py. Each is a thin wrapper: it reads its arguments
(Hydra's through adaptsim/launch/hydra_app.py, or argparse's) and calls the engine (simulate, lockstep, learner,
methods, metrics), the post-editing server (adaptsim/serve/: `serve`) or the base-model tooling (adaptsim/basemodel/:
`train`, `convert`); the reports over finished runs (`table`, `plot`, `findings`, `compare`, `cxmi`, `litter`, `terms`,
`forgetting`) are in adaptsim/report/."""
