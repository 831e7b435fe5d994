"""The instruction families, one package each (wgmma, mma, loaders, memory, tma, gemm), and base.py,
the Family contract they subclass. The registry of them is harness/registry.py: nothing below it looks
a family up by name.
"""
