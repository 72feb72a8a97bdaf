"""Small language models run on tang's own kernels: a GGUF's tokenizer and, later, its model."""
