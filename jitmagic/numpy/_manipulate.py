"""placeholder"""
FUNCTIONS = {}
