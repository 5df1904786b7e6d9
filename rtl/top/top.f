// tpu_top with both cores, as the simulations and the checks build it.
-F ../core/core.f
-F ../seq/seq.f
-F shell.f
