"""The run layer over Hydra (docs/design.md §1, §6): the checks before Hydra starts and `hydra.main` (`hydra_app`),
`--help` from the configs' comments (`help`), the job bookkeeping every launcher shares (`jobs`) and the one resume
rule (`resume`)."""
