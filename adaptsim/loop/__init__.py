"""The simulated post-editing loop (docs/design.md §1): the one stepper and its set-up (`simulation`), a run's
`Learner` and the model clones lockstep shares (`learner`), K runs in one process (`lockstep`), the update rule
(`update`), θ − θ0 on disk (`offsets`), the simulated translator (`interactive`) and the settings' checks
(`settings`)."""
