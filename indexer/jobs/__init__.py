"""indexer/jobs"""
