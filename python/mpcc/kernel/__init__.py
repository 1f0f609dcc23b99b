"""The kernel congestion-control distribution: BPF struct_ops objects, their loader and the
``mpcc kernel`` CLI.

* :mod:`.sources` — the algorithms' BPF sources, their parameters and variants;
* :mod:`.build` — which build the running kernel needs (default, or the compat layer of
  bpf/compat/ where the kernel skips struct_ops programs), detected from a fact of the kernel;
* :mod:`.prebuilt` — the CO-RE objects the package ships (``objects/``);
* :mod:`.bpf` — compile, load, register and unregister (bpftool, libbpf);
* :mod:`.records` — the compat build's health and diagnostic maps;
* :mod:`.verifier` — one-line hints for a verifier refusal;
* :mod:`.cli` — ``mpcc kernel load|unload|list|pm``.
"""
