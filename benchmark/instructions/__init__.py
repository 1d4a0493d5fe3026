"""Instruction counts under callgrind: the tooling and what one count means (`callgrind`), and the
pass that counts CPU cases in workers under valgrind (`counting_pass`). The worker side is
`benchmark.runners.instructions_worker`: it imports the frameworks, which only `benchmark.runners`
may."""
