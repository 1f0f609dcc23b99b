"""Real-kernel engine: the network-namespace testbed (``mpcc testbed``) — topology, the linkem
link emulator, traffic, runs and their summary and health. The congestion controls it loads
are :mod:`mpcc.kernel`'s; the path manager is :mod:`mpcc.pm`. Importing this package is cheap."""
