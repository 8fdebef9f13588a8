"""PyTorch beside our kernels: one subcommand per figure set (see
__main__.py). Importing the package imports no torch: each subcommand's
module does, when it runs."""
