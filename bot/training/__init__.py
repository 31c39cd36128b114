"""Training a reranker on the organization's own code: pair mining, training, model card."""
