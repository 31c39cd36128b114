"""indexer/source"""
