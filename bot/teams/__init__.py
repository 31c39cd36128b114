"""bot/teams"""
