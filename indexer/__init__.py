"""Repository sync, structural chunking, embeddings and the search stores."""

import os as _os

# OpenMP (PyTorch's CPU threads) waits at every barrier by spinning first. When another
# process holds one of the cores, each of a forward pass's hundreds of parallel regions
# waits for a thread that is not running: a one-line question took 500 ms to embed on two
# busy cores instead of 15 ms (bench/bench_contention.py). Waiting threads that sleep at
# once cost nothing measurable on idle cores. Read when the OpenMP runtime loads, so it
# is set here, before anything imports torch; an explicit setting wins.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
