// One optional pipeline register with a clock enable. With Enable = 0 it is a
// wire, which is how the arithmetic units turn their stage boundaries on and off.
module tpu_pipe_reg #(
  parameter int unsigned Width  = 1,
  parameter bit          Enable = 1'b1
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             en_i,
  input  logic [Width-1:0] data_i,
  output logic [Width-1:0] data_o
);

  if (Width < 1) begin : g_bad_width
    $error("tpu_pipe_reg: Width must be >= 1");
  end

  if (Enable) begin : g_reg
    logic [Width-1:0] data_q;

    // The enable sits in the register, not in front of it: a simulator then
    // copies the data only on enabled edges, and nothing combinational hangs
    // on the (often input-driven) enable.
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni)   data_q <= '0;
      else if (en_i) data_q <= data_i;
    end

    assign data_o = data_q;
  end else begin : g_wire
    assign data_o = data_i;
    logic unused_ctrl;
    assign unused_ctrl = ^{clk_i, rst_ni, en_i};
  end

endmodule
