"""Repository sync, structural chunking, embeddings and the search stores."""
