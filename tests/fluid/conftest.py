from fluid_helpers import load  # noqa: F401  (fixture)
