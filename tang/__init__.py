"""tang: plain Python math, written once, run on floats, dual numbers and traced graphs."""

__version__ = "0.1.0"
