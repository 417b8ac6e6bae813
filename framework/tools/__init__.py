"""Command-line tools: ``python -m framework.tools.im2rec`` packs images into RecordIO files;
``python -m framework.tools.config_table`` prints the environment variables as the README lists them.
"""
