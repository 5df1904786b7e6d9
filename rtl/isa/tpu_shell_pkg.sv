// What tpu_top's shell and the core inside it tell each other (rtl/top/tpu_top.sv): both cores,
// tpu_array_core and tpu_seq_core, have these ports.
package tpu_shell_pkg;

  // From the register block (tpu_regs): START and RESET.
  typedef struct packed {
    logic        reset_req;   // START or RESET: the core resets in the next cycle
    logic        start;       // the cycle after the reset of a START
    logic [31:0] prog_addr;
    logic [23:0] prog_count;
    logic [7:0]  pod_id;        // POD.ID, POD.SIZE and LINK_TIMEOUT: for the collective unit
    logic [7:0]  pod_size;
    logic [31:0] link_timeout;
  } core_ctrl_t;

  // To the register block: the core's state.
  typedef struct packed {
    logic        busy;
    logic        done;        // pulse: HALT completed
    logic        error;       // pulse: stopped with an error
    logic [7:0]  error_code;  // tpu_regs_pkg::Err*
    logic [23:0] error_pc;
    logic [23:0] pc;
  } core_status_t;

endpackage
