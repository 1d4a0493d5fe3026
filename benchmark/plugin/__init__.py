"""The pytest side of the suite: `hooks` (the plugin pytest loads through the pytest11 entry point,
options and hooks only), `session` (the state of one run), `execution` (measuring the cases),
`casetrials` (a case's result from its worker trials), `terminal` (what is printed), `selection`
(which cases run), `compat` (pytest-benchmark's options), `hookspecs` (hooks other plugins
implement)."""
