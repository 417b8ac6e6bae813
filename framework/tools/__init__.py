"""Command-line tools: ``python -m framework.tools.im2rec`` packs images into RecordIO files."""
