"""indexer/stores/opensearch"""
