"""The pytest side of the suite: `hooks` (the plugin pytest loads, options and hooks only),
`session` (the state of one run), `execution` (measuring the cases), `casetrials` (a case's
result from its worker trials), `terminal` (what is printed), `selection` (which cases run),
`hookspecs` (hooks other plugins implement)."""
