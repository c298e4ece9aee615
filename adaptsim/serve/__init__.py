"""`adaptsim serve`: a real translator in the simulation's place (docs/serve.md).

- `study`: which method adapts on which document (one method, or a blind balanced assignment), study.json;
- `human`: a simulation's bookkeeping (adaptsim/loop/simulation.py `Simulation`) whose references arrive one at a time,
  and the effort the page measured;
- `state`: the session — the loop of adaptsim/loop/simulation.py cut at the translator: show θ_{i−1}'s translation,
  complete prefixes, and on validation adapt and record exactly as a simulation does;
- `app`: the web server (Starlette), the page (page.html, no build step), and the checks every request passes;
- `client`: the session of serve.api=modernmt, whose documents a CAT tool or ModernMT client sends (memories as
  documents, any source translated, each confirmed pair a step, as `state`'s validation);
- `modernmt`: ModernMT's API on it (paths, parameters, envelope, errors), with the same checks as the page's.
"""
