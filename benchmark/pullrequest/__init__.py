"""What a pull request changes, read from git objects (`changes`), and whether it needs a maintainer's review before it may run on the GPU runner (`review`)."""
