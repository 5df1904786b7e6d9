// Which entries of one unit's queue does a new operation conflict with? It
// conflicts with an entry if it writes what the entry reads or writes (WAR,
// WAW), or reads what it writes (RAW), in the same on-chip memory or in host
// memory. Whether the entry holds an operation in flight is the caller's test.
// Footprints are conservative: a repeated operation's rows are the span from
// its first iteration's first row to its last iteration's last row.
module tpu_hazard_check #(
  parameter int unsigned NumEntries = 4
) (
  input  logic [tpu_core_pkg::FootprintBits-1:0]            new_fp_i,
  input  logic [NumEntries*tpu_core_pkg::FootprintBits-1:0] fps_i,
  output logic [NumEntries-1:0]                             conflict_o
);

  localparam int unsigned FpBits = tpu_core_pkg::FootprintBits;

  tpu_core_pkg::footprint_t fresh, old;

  // Same memory, at least one row in common.
  function automatic logic ranges_meet(input logic [1:0] space_a, input logic [15:0] lo_a,
                                       input logic [16:0] hi_a, input logic [1:0] space_b,
                                       input logic [15:0] lo_b, input logic [16:0] hi_b);
    ranges_meet = space_a != tpu_core_pkg::SpaceNone && space_a == space_b &&
                  tpu_pkg::rows_overlap(lo_a, hi_a, lo_b, hi_b);
  endfunction

  always_comb begin
    fresh      = new_fp_i;
    old        = '0;
    conflict_o = '0;
    for (int e = 0; e < NumEntries; e++) begin
      old = fps_i[e*FpBits +: FpBits];
      if (ranges_meet(fresh.wr.space, fresh.wr.lo, fresh.wr.hi,
                      old.rd.space, old.rd.lo, old.rd.hi) ||
          ranges_meet(fresh.wr.space, fresh.wr.lo, fresh.wr.hi,
                      old.rd2.space, old.rd2.lo, old.rd2.hi) ||
          ranges_meet(fresh.wr.space, fresh.wr.lo, fresh.wr.hi,
                      old.wr.space, old.wr.lo, old.wr.hi) ||
          ranges_meet(fresh.rd.space, fresh.rd.lo, fresh.rd.hi,
                      old.wr.space, old.wr.lo, old.wr.hi) ||
          ranges_meet(fresh.rd2.space, fresh.rd2.lo, fresh.rd2.hi,
                      old.wr.space, old.wr.lo, old.wr.hi)) begin
        conflict_o[e] = 1'b1;
      end
      if (fresh.host.dir != tpu_core_pkg::HostNone && old.host.dir != tpu_core_pkg::HostNone &&
          (fresh.host.dir == tpu_core_pkg::HostWrite || old.host.dir == tpu_core_pkg::HostWrite) &&
          tpu_core_pkg::bytes_overlap(fresh.host.lo, fresh.host.hi, old.host.lo, old.host.hi))
      begin
        conflict_o[e] = 1'b1;
      end
    end
  end

endmodule
