"""bot/answer"""
