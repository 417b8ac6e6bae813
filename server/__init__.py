"""MXLab's server side: scenarios that exercise the framework and report what happened.

Until the web server lands (its own issue), ``python -m server`` runs the default
scenario in the terminal: a text timeline plus a Chrome trace file.
"""
