"""The terminal UI (Textual). The only package that imports Textual."""
