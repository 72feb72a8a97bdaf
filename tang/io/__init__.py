"""Model files: GGUF reading (gguf.py), ggml's block formats (quant.py), finding a model
on disk (models.py). Standard library only; numpy is used when present, never imported here."""

from .gguf import GGUFError as GGUFError
from .gguf import GGUFFile as GGUFFile
from .gguf import TensorInfo as TensorInfo
from .gguf import read as read
from .models import find_model as find_model
from .quant import dequantize as dequantize
from .quant import dequantize_numpy as dequantize_numpy
