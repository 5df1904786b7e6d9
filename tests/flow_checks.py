"""The check the FPGA flow's Python tests share: one line per case, ok or FAIL with both values."""


def check(name, got, expected):
    """Prints the case's outcome; returns 1 for a failure, 0 for a pass."""
    if got != expected:
        print(f"FAIL  {name}:\n  got      {got}\n  expected {expected}")
        return 1
    print(f"ok    {name}")
    return 0
