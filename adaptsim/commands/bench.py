"""`adaptsim bench`: seconds per segment for translating and updating, for later speed targets.

    python -m adaptsim bench model=small-ende-probe dataset=ted segments=40 method=full
    python -m adaptsim bench -m method=none,full,lasso      # one line per method
"""

from __future__ import annotations

import resource

from omegaconf import DictConfig

from adaptsim.records import JobSummary


def main(argv: list[str]) -> int:
    from adaptsim.launch.hydra_app import launch

    return launch(task, "bench", argv, "bench")


def task(cfg: DictConfig, job: JobSummary) -> None:
    from adaptsim.loop.simulation import simulate

    s = simulate(cfg, job, limit=cfg.segments)
    t = s["timing"]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
    job.update(peak_rss_mb=round(peak_mb, 1))
    print(f"bench method={s['method']} model={s['model']} segments={s['segments']} "
          f"threads={t['threads']}: translate median {t['translate_median_s']:.3f} s, "
          f"update median {t['update_median_s']:.3f} s, {t['segments_per_s']:.2f} segments/s, "
          f"peak RSS {peak_mb:.0f} MB (trainable {s['trainable_parameters']:,} parameters)", flush=True)
    if t["rss_mb"]:
        print("RSS after segment " + ", ".join(f"{n}: {mb:.0f} MB" for n, mb in t["rss_mb"].items()), flush=True)
