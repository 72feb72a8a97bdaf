"""Expression graphs: nodes, tracing, gradients, simplification and the text parser."""
