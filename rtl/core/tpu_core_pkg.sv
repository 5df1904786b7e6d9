// Types shared by the units of the array core (tpu_array_core): the decoded
// operation each unit queue holds, and the memory footprint the issue stage
// compares to find hazards between units (docs/isa.md, "Ordering").
//
// Widths are spelled out because Yosys 0.23 cannot take $bits of a package
// type; the checks at the end of each user keep them honest under Verilator.
package tpu_core_pkg;

  // ---------------------------------------------------------------------------
  // The units behind the issue stage, as indices of its per-unit signals.
  // ---------------------------------------------------------------------------
  localparam int unsigned UnitLoad   = 0;  // READ_HOST
  localparam int unsigned UnitWeight = 1;  // READ_WEIGHTS, and MATMUL's FETCH
  localparam int unsigned UnitMatmul = 2;  // MATMUL
  localparam int unsigned UnitAct    = 3;  // ACTIVATE
  localparam int unsigned UnitStore  = 4;  // WRITE_HOST
  localparam int unsigned UnitCollective = 5;  // ALLREDUCE (a core with inter-chip links)
  localparam int unsigned UnitVector = 6;  // ELTWISE (a core with a vector unit)
  localparam int unsigned NumUnits   = 7;

  // ---------------------------------------------------------------------------
  // Footprints: the rows or bytes an operation reads and writes.
  // ---------------------------------------------------------------------------
  localparam logic [1:0] SpaceNone = 2'd0;
  localparam logic [1:0] SpaceUb   = 2'd1;
  localparam logic [1:0] SpaceAcc  = 2'd2;

  localparam logic [1:0] HostNone  = 2'd0;
  localparam logic [1:0] HostRead  = 2'd1;
  localparam logic [1:0] HostWrite = 2'd2;

  // On-chip rows [lo, hi) of the unified buffer or the accumulators.
  typedef struct packed {
    logic [1:0]  space;
    logic [15:0] lo;
    logic [16:0] hi;
  } range_t;
  localparam int unsigned RangeBits = 35;

  // Host bytes [lo, hi), read or written.
  typedef struct packed {
    logic [1:0]  dir;
    logic [31:0] lo;
    logic [32:0] hi;
  } host_range_t;
  localparam int unsigned HostRangeBits = 67;

  typedef struct packed {
    range_t      rd;    // main on-chip source
    range_t      rd2;   // second on-chip source: accumulator seeds or the bias rows
    range_t      wr;    // on-chip destination
    host_range_t host;  // host bytes
  } footprint_t;
  localparam int unsigned FootprintBits = 3 * RangeBits + HostRangeBits;

  // ---------------------------------------------------------------------------
  // A decoded instruction as a unit executes it. Field meanings follow the
  // instruction (docs/isa.md); a unit ignores the fields its opcode does not use.
  // ---------------------------------------------------------------------------
  typedef struct packed {
    logic [23:0] pc;          // instruction index, for ERROR_PC
    logic [7:0]  flags;
    logic [3:0]  func;
    logic [15:0] count;
    logic [15:0] rows;
    logic [15:0] addr_a;
    logic [15:0] addr_b;
    logic [15:0] step_a;
    logic [15:0] step_b;
    logic [31:0] host_addr;
    logic [31:0] host_stride;
    logic [31:0] host_step;
    logic [15:0] alpha;
    logic [15:0] aux_lo;      // MATMUL: k_valid; ACTIVATE, ELTWISE: bias_addr
    logic [15:0] aux_hi;      // MATMUL: n_valid; ACTIVATE, ELTWISE: bias_step
  } op_t;
  localparam int unsigned OpBits = 24 + 8 + 4 + 6 * 16 + 3 * 32 + 3 * 16;

  function automatic logic bytes_overlap(input logic [31:0] lo_a, input logic [32:0] hi_a,
                                         input logic [31:0] lo_b, input logic [32:0] hi_b);
    bytes_overlap = ({1'b0, lo_a} < hi_b) && ({1'b0, lo_b} < hi_a);
  endfunction

endpackage
