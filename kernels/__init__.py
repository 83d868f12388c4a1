"""Compute kernels of spla: arrays in, arrays out; no matrices, no MPI.

``kernels.cpu`` holds numba ``@njit`` kernels, ``kernels.cuda`` their
numba.cuda twins.  Helpers shared by both (random numbers, searches, the
row-level sampler) live at this level.
"""
