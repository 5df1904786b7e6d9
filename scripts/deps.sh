#!/usr/bin/env bash
# Installs the Debian packages the build needs, if any are missing. As root (or
# with password-less sudo) it runs apt-get; otherwise it prints the command to
# run and fails.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  ccache               # compiler cache for the C++ and the Verilator models
  verilator            # 5.006 on Debian 12
  googletest libgtest-dev
  libeigen3-dev        # bfloat16 oracle
  libmpfr-dev          # multiple-precision oracle
  libfmt-dev libcli11-dev
  zlib1g-dev           # gzip-compressed IDX data sets
  nlohmann-json3-dev   # network descriptions
  dataset-fashion-mnist  # the data set the networks train and run on
  gtkwave python3      # fst2vcd checks the .gtkw layout; GTKWave opens the waves
  xvfb                 # a virtual display: the tests open the layouts in the real GTKWave
  imagemagick          # make wave-shots: its `import` takes the screenshots of docs/img
  python3-matplotlib   # the benchmark plots (make bench)
  libserialport-dev    # the serial backend's port to an FPGA board
  libonnx-dev          # `tpu import`: ONNX's protobuf classes
  libprotobuf-dev      # ... and the protobuf runtime they stand on
  libopenmpi-dev openmpi-bin  # the mpi backend: a pod with one chip per MPI rank (mpirun)
  berkeley-abc         # make formal: ABC's pdr (IC3) on the AIGER models YoWASP Yosys writes
  python3-venv         # the FPGA tools' virtual environment: YoWASP Yosys and nextpnr (make synth, make fpga, the tests)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing missing Debian packages: ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    apt_get=(apt-get)
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    apt_get=(sudo apt-get)
  else
    echo "deps: missing packages and no root rights. Run:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${apt_get[@]}" update -qq
  "${apt_get[@]}" install -y -qq --no-install-recommends "${missing[@]}"
fi

version=$(verilator --version | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "5.006" "$version" | sort -V | head -n1)" != "5.006" ]; then
  echo "deps: Verilator $version is too old; 5.006 or newer is needed" >&2
  exit 1
fi
