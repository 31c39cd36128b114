"""bot/chat"""
