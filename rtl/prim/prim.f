// Primitives: registers, delays, FIFOs, RAMs, reset copies and synchronisers, the package of
// shared constants and helpers, and the fold of wide values that handshake assertions check.
tpu_pkg.sv
tpu_pipe_reg.sv
tpu_delay.sv
tpu_fold64.sv
tpu_fifo.sv
tpu_ram_sdp.sv
tpu_ram_fifo.sv
tpu_reset_copy.sv
tpu_flop_copy.sv
tpu_reset_sync.sv
tpu_pulse_stretch.sv
