// Shares one AXI4 read channel among the read engines. Each engine's bursts
// carry its index as ARID; read data come back to the engine whose ID they
// carry. The address channel is granted round robin, and a grant holds until
// its address is accepted, so ARVALID and the address never change early.
// Engines request only what they can buffer, so the addressed engine is always
// ready for its data.
`include "tpu_assert.svh"

module tpu_axi_rd_mux #(
  parameter int unsigned NumClients = 3,
  localparam int unsigned IdWidth   = (NumClients > 1) ? $clog2(NumClients) : 1
) (
  input  logic                     clk_i,
  input  logic                     rst_ni,

  input  logic [NumClients-1:0]    c_ar_valid_i,
  output logic [NumClients-1:0]    c_ar_ready_o,
  input  logic [NumClients*32-1:0] c_ar_addr_i,
  input  logic [NumClients*8-1:0]  c_ar_len_i,
  input  logic [NumClients*3-1:0]  c_ar_size_i,
  output logic [NumClients-1:0]    c_r_valid_o,
  input  logic [NumClients-1:0]    c_r_ready_i,

  output logic                     m_ar_valid_o,
  input  logic                     m_ar_ready_i,
  output logic [IdWidth-1:0]       m_ar_id_o,
  output logic [31:0]              m_ar_addr_o,
  output logic [7:0]               m_ar_len_o,
  output logic [2:0]               m_ar_size_o,
  input  logic                     m_r_valid_i,
  output logic                     m_r_ready_o,
  input  logic [IdWidth-1:0]       m_r_id_i
);

  if (NumClients < 1 || NumClients > 8) begin : g_bad_clients
    $error("tpu_axi_rd_mux: NumClients must be in 1..8");
  end

  localparam int unsigned LastClient = NumClients - 1;
  localparam logic [IdWidth-1:0] LastId = LastClient[IdWidth-1:0];

  logic [IdWidth-1:0] grant, last_grant_d, last_grant_q, held_d, held_q;
  logic               found, holding_d, holding_q;

  always_comb begin
    // Round robin: the first requester after the one granted last; an offered
    // address that has not been accepted keeps its grant.
    grant = last_grant_q;
    found = 1'b0;
    for (int c = 0; c < NumClients; c++) begin
      if (!found && c_ar_valid_i[c] && c[IdWidth-1:0] > last_grant_q) begin
        grant = c[IdWidth-1:0];
        found = 1'b1;
      end
    end
    for (int c = 0; c < NumClients; c++) begin
      if (!found && c_ar_valid_i[c]) begin
        grant = c[IdWidth-1:0];
        found = 1'b1;
      end
    end
    if (holding_q) begin
      grant = held_q;
      found = 1'b1;
    end

    m_ar_valid_o = found;
    m_ar_id_o    = grant;
    m_ar_addr_o  = c_ar_addr_i[grant*32 +: 32];
    m_ar_len_o   = c_ar_len_i[grant*8 +: 8];
    m_ar_size_o  = c_ar_size_i[grant*3 +: 3];
    c_ar_ready_o = '0;
    c_ar_ready_o[grant] = found && m_ar_ready_i;

    last_grant_d = (found && m_ar_ready_i) ? grant : last_grant_q;
    holding_d    = found && !m_ar_ready_i;
    held_d       = grant;

    c_r_valid_o = '0;
    c_r_valid_o[m_r_id_i] = m_r_valid_i;
    m_r_ready_o = c_r_ready_i[m_r_id_i];
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      last_grant_q <= LastId;
      holding_q    <= 1'b0;
      held_q       <= '0;
    end else begin
      last_grant_q <= last_grant_d;
      holding_q    <= holding_d;
      held_q       <= held_d;
    end
  end

  `TPU_ASSUME(a_known_id, !m_r_valid_i || (m_r_id_i <= LastId),
              "read data with an ID no engine uses")
  `TPU_ASSERT_NEXT(a_ar_stable, m_ar_valid_o && !m_ar_ready_i,
                   m_ar_valid_o && $stable(m_ar_id_o) && $stable(m_ar_addr_o) &&
                   $stable(m_ar_len_o) && $stable(m_ar_size_o),
                   "AR changed or withdrawn before it was accepted")

endmodule
