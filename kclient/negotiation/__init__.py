"""negotiation"""
