"""Real-kernel engine: network-namespace testbed (``mpcc testbed``), the linkem link emulator
driver, and the BPF struct_ops loader (``mpcc kernel``). Importing this package is cheap."""
