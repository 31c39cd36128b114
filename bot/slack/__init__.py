"""bot/slack"""
