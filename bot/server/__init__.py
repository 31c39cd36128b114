"""bot/server"""
